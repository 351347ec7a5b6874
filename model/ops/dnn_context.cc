#include "model/ops/dnn_context.h"

#include <cstdlib>
#include <new>

#include "absl/strings/str_cat.h"

namespace llmserve {

absl::Status DnnErrorToStatus(const dnnl::error& e, const char* what) {
  std::string msg = absl::StrCat(what, ": oneDNN error ", static_cast<int>(e.status), ": ", e.what());
  switch (e.status) {
    case dnnl_invalid_arguments:
      return absl::InvalidArgumentError(msg);
    case dnnl_unimplemented:
      return absl::UnimplementedError(msg);
    case dnnl_out_of_memory:
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::StatusOr<std::unique_ptr<DnnContext>> DnnContext::Create() {
  try {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    return std::unique_ptr<DnnContext>(new DnnContext(std::move(engine), std::move(stream)));
  } catch (const dnnl::error& e) {
    return DnnErrorToStatus(e, "oneDNN CPU engine");
  }
}

DnnContext::DnnContext(dnnl::engine engine, dnnl::stream stream)
    : engine_(std::move(engine)), stream_(std::move(stream)) {}

DnnContext::~DnnContext() {
  for (Buffer& b : scratch_) std::free(b.ptr);
}

void* DnnContext::ScratchBuffer(Scratch slot, size_t bytes) {
  Buffer& b = scratch_[static_cast<int>(slot)];
  if (bytes <= b.bytes && b.ptr != nullptr) return b.ptr;
  // Round up to 64 bytes (aligned_alloc needs a multiple of the alignment); at least 64.
  const size_t rounded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::free(b.ptr);
  b.ptr = p;
  b.bytes = rounded;
  return p;
}

}  // namespace llmserve
