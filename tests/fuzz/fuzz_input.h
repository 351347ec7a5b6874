// Helpers shared by the libFuzzer targets: the parsers under test read paths (they map
// files), so a fuzz input becomes a file without touching the disk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace llmserve::fuzz {

// An anonymous in-memory file (memfd) holding `bytes`, reachable as path().
class MemFile {
 public:
  explicit MemFile(std::string_view bytes);
  ~MemFile();
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  // "/proc/self/fd/N": opens and maps like a regular file.
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// A directory in /dev/shm (one per process, reused by every input) for formats that are
// a directory of files (HuggingFace: config.json + model.safetensors).
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // Replaces `name` in the directory with `bytes`.
  void Write(const std::string& name, std::string_view bytes) const;

 private:
  std::string path_;
};

// Splits `data` at its first NUL byte: {before, after}; {data, ""} without one. Targets
// that take two texts (a template and its variables, a config and a tensor file) read
// them this way, so the corpus stays readable and the mutator can move the boundary.
std::pair<std::string_view, std::string_view> SplitAtNul(const uint8_t* data, size_t size);

}  // namespace llmserve::fuzz
