// libFuzzer target: a GGUF file, through everything llmserve reads from one before it
// builds the transformer: the header, metadata and tensor table (GgufFile), the model
// config and tensor views (LoadGgufModel), the embedded tokenizer (built and used on a
// short text), and for every tensor in the file (a model or not) the non-finite weight
// scan and the dequantization of a quantized tensor's first and last rows. Any crash, sanitizer report or leak is a finding; an
// error status is the expected answer to a malformed file.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/finite_check.h"
#include "model/formats/gguf_file.h"
#include "model/formats/gguf_model.h"
#include "model/formats/gguf_tokenizer.h"
#include "model/quant/ggml_blocks.h"
#include "model/quant/quant_type.h"
#include "model/tokenizer/tokenizer.h"

namespace {

void DequantizeEnds(const llmserve::TensorView& t) {
  if (!t.quantized() || t.shape.empty()) return;
  const int64_t cols = t.shape.back();
  auto row_bytes = llmserve::QuantRowBytes(t.quant, cols);
  if (!row_bytes.ok() || *row_bytes <= 0 || t.nbytes < static_cast<size_t>(*row_bytes)) return;
  const size_t rows = t.nbytes / static_cast<size_t>(*row_bytes);
  std::vector<float> out(static_cast<size_t>(cols));
  llmserve::DequantizeRow(t.quant, t.data, cols, out.data());
  llmserve::DequantizeRow(t.quant, t.data + (rows - 1) * static_cast<size_t>(*row_bytes), cols, out.data());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto gguf = llmserve::GgufFile::ParseBytes(std::span<const uint8_t>(data, size), "fuzz.gguf");
  if (!gguf.ok()) return 0;
  for (const auto& [key, value] : (*gguf)->metadata()) (void)value.DebugString();
  for (const llmserve::GgufTensorInfo& info : (*gguf)->tensors()) {
    auto view = (*gguf)->View(info);
    if (!view.ok()) continue;
    (void)llmserve::CheckFinite(*view);
    DequantizeEnds(*view);
  }

  if (auto spec = llmserve::TokenizerSpecFromGguf(**gguf); spec.ok()) {
    if (auto tok = llmserve::CreateTokenizer(*std::move(spec)); tok.ok()) {
      if (auto ids = (*tok)->Encode("Hello world, <s> 12345 \n\t héllo", {}); ids.ok()) (void)(*tok)->Decode(*ids);
    }
  }
  // The model's views (split fused tensors among them) are row ranges of the same bytes.
  auto weights = llmserve::LoadGgufModel(**gguf);
  if (!weights.ok()) return 0;
  for (const auto& [name, view] : (*weights)->tensors()) DequantizeEnds(view);
  return 0;
}
