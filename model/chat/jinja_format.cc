#include "model/chat/jinja_format.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "model/chat/jinja_interp.h"
#include "model/chat/jinja_pystr.h"

namespace llmserve::chat::jinja {
namespace {

// Pads `s` (code points) to `width`, left-aligned with '-'.
std::string Pad(std::string s, int64_t width, bool left, char fill = ' ') {
  const int64_t len = static_cast<int64_t>(CodePointCount(s));
  if (width <= len) return s;
  std::string pad(static_cast<size_t>(width - len), fill);
  return left ? s + pad : pad + s;
}

}  // namespace

absl::StatusOr<std::string> PyPercentFormat(const std::string& fmt, const std::vector<Value>& args,
                                            size_t max_bytes) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (out.size() > max_bytes) return absl::ResourceExhaustedError("formatted string exceeds max_string_bytes");
    if (fmt[i] != '%') {
      out.push_back(fmt[i]);
      continue;
    }
    if (++i >= fmt.size()) return ValueError("incomplete format");
    std::string flags;
    while (i < fmt.size() && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos) flags.push_back(fmt[i++]);
    int64_t width = 0, prec = -1;
    while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])) && width < 100000) width = width * 10 + (fmt[i++] - '0');
    if (i < fmt.size() && fmt[i] == '.') {
      prec = 0;
      ++i;
      while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])) && prec < 1000) prec = prec * 10 + (fmt[i++] - '0');
    }
    if (i >= fmt.size()) return ValueError("incomplete format");
    const char conv = fmt[i];
    if (conv == '%') {
      out.push_back('%');
      continue;
    }
    if (width > 100000 || static_cast<size_t>(width) > max_bytes) return absl::ResourceExhaustedError("format width too large");
    if (next >= args.size()) return TypeError("not enough arguments for format string");
    const Value& v = args[next++];
    if (v.is_undefined()) return UndefinedError(v);
    const bool left = flags.find('-') != std::string::npos;
    if (conv == 's' || conv == 'r') {
      std::string s = conv == 's' ? PyStr(v) : PyRepr(v);
      if (prec >= 0) {
        std::vector<size_t> offs = CodePointOffsets(s);
        if (static_cast<size_t>(prec) + 1 < offs.size()) s.resize(offs[prec]);
      }
      out += Pad(std::move(s), width, left);
      continue;
    }
    if (std::string_view("diouxXeEfFgGc").find(conv) == std::string_view::npos) {
      return ValueError(absl::StrCat("unsupported format character '", std::string(1, conv), "'"));
    }
    if (!v.is_number()) {
      return TypeError(absl::StrCat("%", std::string(1, conv), " format: a real number is required, not ", TypeName(v)));
    }
    std::string spec(1, '%');  // built by appends: GCC 12 -Wrestrict misfires on "lit" + string
    spec += flags;
    if (width > 0) spec += std::to_string(width);
    if (prec >= 0) {
      spec.push_back('.');
      spec += std::to_string(prec);
    }
    char buf[1200];
    if (conv == 'c') {
      const int64_t cp = v.is_float() ? -1 : v.as_int();
      if (cp < 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return absl::InvalidArgumentError("OverflowError: %c arg not in range(0x110000)");
      }
      std::string ch;
      AppendUtf8(static_cast<char32_t>(cp), &ch);
      out += Pad(ch, width, left);
      continue;
    }
    if (std::string_view("diouxX").find(conv) != std::string_view::npos) {
      const double d = v.as_float();
      if (v.is_float() && (!std::isfinite(d) || std::fabs(d) >= 9.2e18)) return absl::InvalidArgumentError("OverflowError: integer overflow");
      const long long n = v.is_float() ? static_cast<long long>(d) : v.as_int();
      spec += std::string("ll") + (conv == 'i' || conv == 'u' ? 'd' : conv);
      std::snprintf(buf, sizeof(buf), spec.c_str(), n);
    } else {
      spec.push_back(conv);
      std::snprintf(buf, sizeof(buf), spec.c_str(), v.as_float());
    }
    out += buf;
  }
  if (next < args.size()) return TypeError("not all arguments converted during string formatting");
  return out;
}

}  // namespace llmserve::chat::jinja
