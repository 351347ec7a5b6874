#include "tests/fuzz/fuzz_input.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace llmserve::fuzz {

MemFile::MemFile(std::string_view bytes) {
  fd_ = memfd_create("fuzz-input", MFD_CLOEXEC);
  if (fd_ < 0) {
    std::perror("memfd_create");
    std::abort();  // the harness cannot run: not a finding in the code under test
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd_, bytes.data() + done, bytes.size() - done);
    if (n <= 0) {
      std::perror("write memfd");
      std::abort();
    }
    done += static_cast<size_t>(n);
  }
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

MemFile::~MemFile() {
  if (fd_ >= 0) close(fd_);
}

ScratchDir::ScratchDir() {
  path_ = "/dev/shm/llmserve-fuzz-" + std::to_string(getpid());
  std::filesystem::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void ScratchDir::Write(const std::string& name, std::string_view bytes) const {
  std::ofstream out(path_ + "/" + name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::perror("write scratch file");
    std::abort();
  }
}

std::pair<std::string_view, std::string_view> SplitAtNul(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t nul = all.find('\0');
  if (nul == std::string_view::npos) return {all, std::string_view()};
  return {all.substr(0, nul), all.substr(nul + 1)};
}

}  // namespace llmserve::fuzz
