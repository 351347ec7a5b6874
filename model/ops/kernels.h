// Elementwise and row kernels of the transformer (f32 activations), each with an AVX-512
// and a scalar implementation: `isa` (model/ops/isa.h, the Transformer's kernel plan)
// says which may run. Parallel over rows with OpenMP where rows are many.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "model/ops/isa.h"

namespace llmserve {

// y[r] = x[r] / rms(x[r]) * w, for `rows` rows of `dim`. y may alias x.
void RmsNorm(Isa isa, const float* x, const float* w, int64_t rows, int64_t dim, float eps, float* y);

// y[r] = (x[r] - mean) / sqrt(var + eps) * w + b. y may alias x.
void LayerNorm(Isa isa, const float* x, const float* w, const float* b, int64_t rows, int64_t dim, float eps,
               float* y);

// out[i] = silu(gate[i]) * up[i] for `n` elements (SwiGLU). out may alias gate.
void SiluMul(Isa isa, const float* gate, const float* up, int64_t n, float* out);

// x[i] = gelu_tanh(x[i]) (GPT-2's "gelu_new").
void GeluTanh(Isa isa, float* x, int64_t n);

// y[i] += x[i].
void AddInPlace(Isa isa, float* y, const float* x, int64_t n);

// y[r, h] = RmsNorm(x[r, h]) for `rows` rows (row stride `row_stride` floats) of `heads`
// consecutive vectors of `dim`, each scaled by the same w [dim] (Qwen3's q/k norm). In place.
void RmsNormHeads(Isa isa, float* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t dim, const float* w,
                  float eps);

// Inverse frequencies of RoPE for one head: rope_dim/2 values, with the config's
// scaling (none, linear, llama3; longrope: the short factors) applied.
std::vector<float> RopeInvFreq(const ModelConfig& config);

// Everything RopeTable needs for a model: inv_freq for positions below long_from,
// long_inv_freq from there on (longrope only; empty otherwise), and the factor on cos
// and sin (longrope's attention factor; 1 otherwise).
struct RopeFrequencies {
  std::vector<float> inv_freq;
  std::vector<float> long_inv_freq;
  int64_t long_from = 0;
  float mscale = 1.0f;
};
RopeFrequencies RopeFrequenciesFor(const ModelConfig& config);

// Rotates `rows` rows of `heads` heads of `head_dim` values in place, row r at
// position positions[r], the first `rope_dim` dims of each head, in `layout`:
//   kInterleaved pairs (2i, 2i+1); kHalf pairs (i, i + rope_dim/2).
// `row_stride` is the distance in floats between consecutive rows.
void ApplyRope(Isa isa, float* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
               int64_t rope_dim, const int32_t* positions, const std::vector<float>& inv_freq, RopeLayout layout);

// The same in two parts, so that a forward pass computes the angles' cosines and sines
// once for all its layers. RopeTable fills `table` (rows × 2·inv_freq.size() floats) with,
// for row r, cos then sin of positions[r] · inv_freq[i]; ApplyRopeTable rotates with it
// exactly as ApplyRope does.
void RopeTable(const int32_t* positions, int64_t rows, const std::vector<float>& inv_freq, float* table);
// The same with a model's frequencies: row r uses long_inv_freq when positions[r] >=
// long_from (and it is not empty), and cos and sin are multiplied by mscale.
void RopeTable(const int32_t* positions, int64_t rows, const RopeFrequencies& freqs, float* table);
void ApplyRopeTable(Isa isa, float* x, int64_t rows, int64_t row_stride, int64_t heads, int64_t head_dim,
                    int64_t rope_dim, const float* table, int64_t table_half, RopeLayout layout);

}  // namespace llmserve
