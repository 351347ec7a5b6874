#include "model/ops/huge_page_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace llmserve {
namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

absl::StatusOr<HugePageBuffer> HugePageBuffer::Allocate(size_t bytes, const char* what) {
  if (bytes == 0) return absl::InvalidArgumentError(absl::StrCat(what, ": empty buffer"));
  if (bytes > SIZE_MAX - kHugePage) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": ", bytes, " bytes cannot be mapped"));
  }
  const bool huge = bytes >= kHugePage;
  // Over-map by one huge page so the start can be rounded up to a 2 MiB boundary: only
  // aligned 2 MiB ranges can become huge pages.
  const size_t map_bytes = huge ? bytes + kHugePage : bytes;
  void* map = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": cannot map ", bytes, " bytes: ", std::strerror(errno)));
  }
  HugePageBuffer b;
  b.map_ = map;
  b.map_bytes_ = map_bytes;
  b.bytes_ = bytes;
  uintptr_t start = reinterpret_cast<uintptr_t>(map);
  if (huge) {
    start = (start + kHugePage - 1) & ~(kHugePage - 1);
    // Only whole huge pages: a partly used last one would commit up to 2 MiB that the
    // buffer never uses (the tail stays on 4 KiB pages). Advice only; failure is harmless.
    madvise(reinterpret_cast<void*>(start), bytes & ~(kHugePage - 1), MADV_HUGEPAGE);
  }
  b.data_ = reinterpret_cast<uint8_t*>(start);
  return b;
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept { *this = std::move(other); }

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    map_ = std::exchange(other.map_, nullptr);
    map_bytes_ = std::exchange(other.map_bytes_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

HugePageBuffer::~HugePageBuffer() { Release(); }

void HugePageBuffer::Release() {
  if (map_ != nullptr) munmap(map_, map_bytes_);
  map_ = nullptr;
  data_ = nullptr;
  map_bytes_ = bytes_ = 0;
}

}  // namespace llmserve
