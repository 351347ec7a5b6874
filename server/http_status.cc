#include "server/http_status.h"

#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"

namespace llmserve {
namespace {

constexpr char kHttpStatusUrl[] = "type.llmserve/http_status";
constexpr char kParamUrl[] = "type.llmserve/param";

// OpenAI's error "type" for an HTTP status.
const char* ErrorType(int http_status) {
  switch (http_status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable_error";
    case 504: return "timeout_error";
    default: return http_status < 500 ? "invalid_request_error" : "server_error";
  }
}

}  // namespace

absl::Status WithHttpStatus(absl::Status status, int http_status) {
  status.SetPayload(kHttpStatusUrl, absl::Cord(std::to_string(http_status)));
  return status;
}

absl::Status WithParam(absl::Status status, std::string_view param) {
  status.SetPayload(kParamUrl, absl::Cord(absl::string_view(param.data(), param.size())));
  return status;
}

int HttpStatusCode(const absl::Status& status) {
  if (auto explicit_status = status.GetPayload(kHttpStatusUrl)) {
    int code = 0;
    if (absl::SimpleAtoi(std::string(*explicit_status), &code) && code >= 400 && code <= 599) return code;
  }
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated: return 401;
    case absl::StatusCode::kPermissionDenied: return 403;
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kResourceExhausted: return 429;
    case absl::StatusCode::kCancelled: return 499;  // the client went away (nginx's code)
    case absl::StatusCode::kUnavailable: return 503;
    case absl::StatusCode::kDeadlineExceeded: return 504;
    default: return 500;
  }
}

HttpError ToHttpError(const absl::Status& status) {
  HttpError out;
  out.status = HttpStatusCode(status);
  nlohmann::json param = nullptr;
  if (auto p = status.GetPayload(kParamUrl)) param = std::string(*p);
  std::string message(status.message());
  if (message.empty()) message = std::string(absl::StatusCodeToString(status.code()));
  nlohmann::json code = nullptr;
  if (out.status == 401) code = "invalid_api_key";
  out.body = {{"error", {{"message", std::move(message)}, {"type", ErrorType(out.status)}, {"param", param},
                         {"code", code}}}};
  return out;
}

}  // namespace llmserve
