// DnnContext: the oneDNN CPU engine and stream shared by all layers of one Transformer,
// plus scratch buffers that grow to the largest step and are then reused.
// Engine thread only (one DnnContext per Transformer; not thread-safe). Must outlive every
// Linear created with it (they keep a reference).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <oneapi/dnnl/dnnl.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace llmserve {

// Converts a oneDNN exception into INVALID_ARGUMENT / UNIMPLEMENTED / INTERNAL,
// prefixed by `what` (e.g. "linear blk.0.attn_q.weight: matmul").
absl::Status DnnErrorToStatus(const dnnl::error& e, const char* what);

class DnnContext {
 public:
  // Scratch buffers; each is independent, so one user never clobbers another's.
  enum class Scratch : int { kOneDnn = 0, kBf16Src = 1, kQuantActs = 2, kQuantPanels = 3, kCount = 4 };

  // Creates the CPU engine (index 0) and an in-order stream.
  static absl::StatusOr<std::unique_ptr<DnnContext>> Create();

  DnnContext(const DnnContext&) = delete;
  DnnContext& operator=(const DnnContext&) = delete;
  ~DnnContext();

  // The CPU engine.
  dnnl::engine& engine() { return engine_; }
  // The stream primitives execute on (blocking CPU stream).
  dnnl::stream& stream() { return stream_; }

  // A 64-byte aligned buffer of at least `bytes` for `slot`; grows (never shrinks) and
  // returns the same pointer until a larger size is asked. Contents are not preserved.
  void* ScratchBuffer(Scratch slot, size_t bytes);

  // Bytes currently reserved by `slot`.
  size_t ScratchCapacity(Scratch slot) const { return scratch_[static_cast<int>(slot)].bytes; }

 private:
  DnnContext(dnnl::engine engine, dnnl::stream stream);

  struct Buffer {
    void* ptr = nullptr;
    size_t bytes = 0;
  };

  dnnl::engine engine_;
  dnnl::stream stream_;
  Buffer scratch_[static_cast<int>(Scratch::kCount)];
};

}  // namespace llmserve
