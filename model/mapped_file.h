// A read-only memory-mapped file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace llmserve {

// Read-only mmap of a whole file; unmapped on destruction. Thread-safe (immutable).
class MappedFile {
 public:
  // Maps `path`. NOT_FOUND / INVALID_ARGUMENT (directory) / INTERNAL with the path in the message.
  static absl::StatusOr<std::shared_ptr<MappedFile>> Open(const std::string& path);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // File contents (empty span for an empty file).
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Drops the pages wholly inside [p, p + n) (a range of this mapping) from the process's
  // memory (madvise MADV_DONTNEED); reading them again refetches them from the file.
  void ReleasePages(const uint8_t* p, size_t n) const;

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

}  // namespace llmserve
