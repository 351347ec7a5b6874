// Bounds-checked little-endian reader over an untrusted byte buffer.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace llmserve {

// Reads fixed-size values and byte runs; every read checks the remaining length and
// fails with an INVALID_ARGUMENT naming `source` and the offset. Not thread-safe.
class ByteReader {
 public:
  ByteReader(std::span<const uint8_t> bytes, std::string source)
      : bytes_(bytes), source_(std::move(source)) {}

  size_t position() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }
  size_t size() const { return bytes_.size(); }
  const std::string& source() const { return source_; }

  // Reads one trivially-copyable little-endian value (x86-64 host order).
  template <typename T>
  absl::Status Read(T* out, absl::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (remaining() < sizeof(T)) return Truncated(what, sizeof(T));
    std::memcpy(out, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return absl::OkStatus();
  }

  // Returns a view of the next `n` bytes.
  absl::Status ReadBytes(uint64_t n, std::string_view* out, absl::string_view what) {
    if (remaining() < n) return Truncated(what, n);
    *out = std::string_view(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return absl::OkStatus();
  }

  absl::Status Skip(uint64_t n, absl::string_view what) {
    if (remaining() < n) return Truncated(what, n);
    pos_ += n;
    return absl::OkStatus();
  }

  // Moves to absolute offset `pos` (<= size()).
  absl::Status Seek(uint64_t pos, absl::string_view what) {
    if (pos > bytes_.size()) {
      return Error(absl::StrCat(what, ": offset ", pos, " is past the end of the file (",
                                bytes_.size(), " bytes)"));
    }
    pos_ = pos;
    return absl::OkStatus();
  }

  // INVALID_ARGUMENT "<source>: <message> (at byte <pos>)".
  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ": ", message, " (at byte ", pos_, ")"));
  }

 private:
  absl::Status Truncated(absl::string_view what, uint64_t need) const {
    return Error(absl::StrCat("truncated file: need ", need, " bytes for ", what, ", only ",
                              remaining(), " left"));
  }

  std::span<const uint8_t> bytes_;
  std::string source_;
  size_t pos_ = 0;
};

}  // namespace llmserve
