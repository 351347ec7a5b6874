// An anonymous memory mapping advised to use transparent huge pages: for large arrays that
// kernels stream through (packed weights, the KV cache). With 4 KiB pages a decode step's
// ~2 GB weight stream takes a TLB miss every 4 KiB; 2 MiB pages remove almost all of them.
// The advice is only advice: where THP is off, the buffer is ordinary pages.
#ifndef LLMSERVE_MODEL_OPS_HUGE_PAGE_BUFFER_H_
#define LLMSERVE_MODEL_OPS_HUGE_PAGE_BUFFER_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"

namespace llmserve {

class HugePageBuffer {
 public:
  // Maps `bytes` (> 0) of zero-filled memory, 2 MiB-aligned when at least 2 MiB, with
  // MADV_HUGEPAGE. RESOURCE_EXHAUSTED when the mapping fails; `what` names it in the message.
  static absl::StatusOr<HugePageBuffer> Allocate(size_t bytes, const char* what);

  HugePageBuffer() = default;
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  ~HugePageBuffer();

  uint8_t* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  void Release();

  uint8_t* data_ = nullptr;  // the aligned start handed out
  void* map_ = nullptr;      // the whole mapping (may start before data_)
  size_t map_bytes_ = 0;
  size_t bytes_ = 0;
};

}  // namespace llmserve

#endif  // LLMSERVE_MODEL_OPS_HUGE_PAGE_BUFFER_H_
