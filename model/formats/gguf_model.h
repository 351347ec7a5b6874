// Loading a transformer (ModelConfig + tensor views) from a GGUF file.
//
// Supported: general.architecture `llama` (RMSNorm, interleaved RoPE: llama.cpp's
// converter permutes Q/K rows for it, SwiGLU, GQA), `qwen2` (+ QKV biases), `qwen3` (+
// per-head q/k RMSNorm, attn_q_norm / attn_k_norm), `phi3` (fused attn_qkv, ffn_up
// holding gate | up, LongRoPE from rope_factors_long/short.weight, partial rotary) --
// these three with NEOX (rotate-half) RoPE on unpermuted rows -- and `gpt2` (LayerNorm
// with biases, learned positions, GELU-tanh, fused QKV); <arch>.attention.sliding_window
// for a window on every layer. Tensors F32, F16, BF16 or ggml-quantized. GGUF tensor names
// are llmserve's canonical names (model/model_weights.h); fused Llama-family tensors are
// split into their row ranges.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/formats/gguf_file.h"
#include "model/model_config.h"
#include "model/model_weights.h"

namespace llmserve {

// Maps `path` and loads it; tensor views point into the mapping, which the weights keep alive.
absl::StatusOr<std::unique_ptr<ModelWeights>> LoadGgufModel(const std::string& path);

// Loads from a parsed file. The views point into `gguf`'s bytes: the weights keep
// gguf.mapped_file() alive, or (ParseBytes) the caller must keep the bytes alive.
absl::StatusOr<std::unique_ptr<ModelWeights>> LoadGgufModel(const GgufFile& gguf);

// The ModelConfig that `gguf`'s metadata (and which tensors it has) describe; not yet
// validated. UNIMPLEMENTED for other architectures or unsupported RoPE scaling.
absl::StatusOr<ModelConfig> GgufModelConfig(const GgufFile& gguf);

}  // namespace llmserve
