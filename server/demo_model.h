// The built-in demo model: what llmserve serves when no --model is given (a fresh machine
// without internet), so the server always starts. A small Llama-shaped model whose
// weights come from a fixed seed (the same on every start and machine), with a byte-level
// vocabulary:
//
//   ids 0..255   one byte each (id 65 = 'A'): a byte-level BPE vocabulary without merges
//   id  256      <s>   BOS (control)
//   id  257      </s>  EOS (control)
//
// 4 layers, hidden 256, 8 heads of 32 (4 KV heads), SwiGLU 768, RoPE, context 2048.
// Its text is meaningless. The output head gives printable ASCII bytes and '\n' logits
// spread over several units and every other token a logit of 0, so sampled text is
// (almost surely) printable ASCII and EOS practically never comes.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/tokenizer/tokenizer.h"

namespace llmserve {

struct DemoModel {
  std::unique_ptr<ModelWeights> weights;  // owns its tensor buffers
  std::unique_ptr<Tokenizer> tokenizer;
};

// The demo model's config (name "demo", format "demo").
ModelConfig DemoModelConfig();

// Generates the weights (deterministic) and the byte tokenizer.
absl::StatusOr<DemoModel> MakeDemoModel();

}  // namespace llmserve
