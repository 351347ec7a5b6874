// llama2.c checkpoints (karpathy/llama2.c `.bin`), fp32 versions 0 and 1.
//
// Version 0 (legacy, what run.c reads):
//   int32 dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
//   (vocab_size < 0: the classifier `wcls` is stored separately at the end)
//   f32 token_embedding[vocab][dim]
//       rms_att[L][dim]  wq[L][dim][dim]  wk[L][kv_dim][dim]  wv[L][kv_dim][dim]
//       wo[L][dim][dim]  rms_ffn[L][dim]  w1[L][hidden][dim]  w2[L][dim][hidden]
//       w3[L][hidden][dim]  rms_final[dim]
//       freq_cis_real[seq_len][head_size/2]  freq_cis_imag[seq_len][head_size/2]  (unused)
//       wcls[vocab][dim]                     (only when untied)
// Version 1 (export.py version1_export): 256-byte header
//   u32 magic 0x616b3432 ("ak42"), i32 version = 1, the 7 int32 above (vocab > 0),
//   u8 shared_classifier, zero padding to byte 256;
//   f32 rms_att[L][dim] rms_ffn[L][dim] rms_final[dim] token_embedding[vocab][dim]
//       wq wk wv wo w1 w2 w3 (stacked as above), wcls[vocab][dim] if not shared.
// Version 2 (int8 Q8_0) is recognized and rejected as UNIMPLEMENTED.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/model_weights.h"

namespace llmserve {

// Loads a llama2.c checkpoint; every tensor is an f32 view into the mapped file.
// INVALID_ARGUMENT naming the file for a bad header or a size that does not match it.
absl::StatusOr<std::unique_ptr<ModelWeights>> LoadLlama2cModel(const std::string& path);

// OK when `path` has a valid llama2.c header and the size it implies (what
// LoadLlama2cModel checks before it reads a tensor); else LoadLlama2cModel's error.
absl::Status ProbeLlama2cModel(const std::string& path);

}  // namespace llmserve
