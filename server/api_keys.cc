#include "server/api_keys.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace llmserve {
namespace {

constexpr size_t kMinKeyLength = 16;
constexpr size_t kMaxKeyLength = 256;
constexpr absl::string_view kHashPrefix = "sha256:";
constexpr absl::string_view kBearer = "bearer ";

bool PrintableNoSpace(absl::string_view s) {
  for (char c : s) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseHexDigest(absl::string_view hex, ApiKeys::Digest* out) {
  if (hex.size() != 2 * out->size()) return false;
  for (size_t i = 0; i < out->size(); ++i) {
    const int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return true;
}

}  // namespace

ApiKeys::Digest ApiKeys::Sha256(absl::string_view text) {
  Digest d;
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), d.data());
  return d;
}

absl::StatusOr<ApiKeys> ApiKeys::Parse(absl::string_view text, absl::string_view source) {
  ApiKeys keys;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    const auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(source, " line ", line_number, ": ", why));
    };
    Digest d;
    if (absl::StartsWith(line, kHashPrefix)) {
      if (!ParseHexDigest(line.substr(kHashPrefix.size()), &d)) {
        return bad("a hashed key is sha256: and 64 hex digits");
      }
    } else {
      if (line.size() < kMinKeyLength || line.size() > kMaxKeyLength || !PrintableNoSpace(line)) {
        return bad(absl::StrCat("a key is ", kMinKeyLength, " to ", kMaxKeyLength,
                                " printable ASCII characters without spaces (or sha256:<hex>)"));
      }
      d = Sha256(line);
    }
    keys.digests_.push_back(d);
  }
  if (keys.digests_.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ": no API key in the file"));
  return keys;
}

absl::StatusOr<ApiKeys> ApiKeys::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::FailedPreconditionError(absl::StrCat("--api-key-file=", path, ": cannot read the file"));
  std::ostringstream text;
  text << in.rdbuf();
  return Parse(text.str(), absl::StrCat("--api-key-file=", path));
}

bool ApiKeys::Accepts(absl::string_view authorization) const {
  if (authorization.size() <= kBearer.size() ||
      !absl::EqualsIgnoreCase(authorization.substr(0, kBearer.size()), kBearer)) {
    return false;
  }
  const Digest presented = Sha256(absl::StripAsciiWhitespace(authorization.substr(kBearer.size())));
  bool found = false;
  for (const Digest& d : digests_) found |= CRYPTO_memcmp(d.data(), presented.data(), d.size()) == 0;
  return found;
}

ApiKeyStore::ApiKeyStore(std::optional<ApiKeys> keys) : enabled_(keys.has_value()) {
  if (keys.has_value()) keys_ = std::make_shared<const ApiKeys>(*std::move(keys));
}

void ApiKeyStore::Replace(ApiKeys keys) {
  if (!enabled_) return;
  auto fresh = std::make_shared<const ApiKeys>(std::move(keys));
  absl::MutexLock lock(&mu_);
  keys_ = std::move(fresh);
}

bool ApiKeyStore::Accepts(absl::string_view authorization) const {
  if (!enabled_) return true;
  std::shared_ptr<const ApiKeys> keys;
  {
    absl::ReaderMutexLock lock(&mu_);
    keys = keys_;
  }
  return keys->Accepts(authorization);
}

}  // namespace llmserve
