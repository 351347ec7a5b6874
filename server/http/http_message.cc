#include "server/http/http_message.h"

#include <strings.h>

namespace llmserve::http {
namespace {

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

std::string_view HttpRequest::Header(std::string_view name) const {
  for (const HttpHeader& h : headers) {
    if (SameName(h.name, name)) return h.value;
  }
  return {};
}

bool HttpRequest::HasHeader(std::string_view name) const {
  for (const HttpHeader& h : headers) {
    if (SameName(h.name, name)) return true;
  }
  return false;
}

std::vector<std::string_view> HttpRequest::HeaderValues(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const HttpHeader& h : headers) {
    if (SameName(h.name, name)) out.push_back(h.value);
  }
  return out;
}

}  // namespace llmserve::http
