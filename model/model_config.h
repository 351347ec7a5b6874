// ModelConfig: everything the transformer needs to know about a model's shape,
// read from any of the supported file formats.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace llmserve {

// kLlama, kQwen2, kQwen3 and kPhi3 are the Llama family: one forward pass, the fields
// below say how they differ (Qwen2: qkv_bias; Qwen3: qk_norm; Phi-3: longrope; their
// fused file tensors are split into the canonical ones by the loaders). Mistral is kLlama.
enum class Architecture { kLlama, kQwen2, kQwen3, kPhi3, kGpt2 };
enum class NormKind { kRmsNorm, kLayerNorm };
enum class PositionKind { kRope, kLearned };
// How RoPE pairs dimensions inside a head:
//   kInterleaved: (0,1),(2,3),...  Meta / llama2.c / GGUF (Q,K rows permuted by convert).
//   kHalf:        (i, i+d/2)       HuggingFace "rotate_half" (GPT-NeoX style).
enum class RopeLayout { kInterleaved, kHalf };
enum class RopeScalingKind { kNone, kLinear, kLlama3, kLongRope };
// kSilu => SwiGLU MLP (gate, up, down); kGeluTanh => GPT-2 MLP (up, gelu, down).
enum class Activation { kSilu, kGeluTanh };

struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::kNone;
  float factor = 1.0f;            // linear and llama3
  float low_freq_factor = 1.0f;   // llama3
  float high_freq_factor = 4.0f;  // llama3
  int64_t original_context = 0;   // llama3, longrope: original_max_position_embeddings
  // longrope (Phi-3): per-pair divisors of the frequencies (rope_dim / 2 each). A token at
  // position p uses long_factor when p + 1 > original_context (HF's rule, seq_len >
  // original_max_position_embeddings, with seq_len = p + 1), else short_factor.
  std::vector<float> short_factor = {}, long_factor = {};
  float attention_factor = 1.0f;  // longrope: multiplies cos and sin (HF attention_scaling)
};

// Sampling defaults a model ships (HF generation_config.json), for the fields a request
// leaves unset; unset here: the API's own default.
struct GenerationDefaults {
  std::optional<float> temperature;
  std::optional<int32_t> top_k;
  std::optional<float> top_p;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;

  bool empty() const { return !temperature && !top_k && !top_p && !min_p && !repetition_penalty; }
};

struct ModelConfig {
  std::string name;          // e.g. file stem or general.name
  std::string format;        // "llama2c", "gguf", "hf"
  Architecture arch = Architecture::kLlama;

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;   // model dim
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // == num_heads for MHA, fewer for GQA
  int64_t head_dim = 0;      // usually hidden_size / num_heads
  int64_t ffn_dim = 0;       // MLP inner size

  NormKind norm = NormKind::kRmsNorm;
  float norm_eps = 1e-5f;

  PositionKind position = PositionKind::kRope;
  RopeLayout rope_layout = RopeLayout::kHalf;
  float rope_theta = 10000.0f;
  int64_t rope_dim = 0;      // rotated dims per head (== head_dim unless partial)
  RopeScaling rope_scaling;

  Activation activation = Activation::kSilu;
  bool qkv_bias = false;     // Qwen2: q/k/v biases; GPT-2: fused qkv bias
  bool out_bias = false;     // attention output projection bias (GPT-2)
  bool mlp_bias = false;     // MLP biases (GPT-2)
  bool norm_bias = false;    // LayerNorm bias (GPT-2)
  bool tied_embeddings = false;  // output head shares token_embd
  bool qk_norm = false;      // Qwen3: RMSNorm (norm_eps) of every q and k head before RoPE,
                             // weights blk.N.attn_q_norm / attn_k_norm [head_dim]

  // Sliding-window attention: > 0 means a query at position p attends to the keys at
  // positions (p - sliding_window, p], i.e. the last sliding_window tokens including its
  // own (HF's sliding_window_overlay: kv_idx > q_idx - sliding_window). 0: full attention.
  int64_t sliding_window = 0;
  // Which layers use the window ([num_layers]); empty: all of them (Qwen2/3 use it only
  // from max_window_layers on).
  std::vector<bool> sliding_layers;

  int64_t context_length = 0;
  int32_t bos_id = -1;       // -1: none
  int32_t eos_id = -1;       // -1: none
  // Every id that ends generation (end of text, of turn, of message): eos_id, the rest of
  // an eos_token_id list (config.json, generation_config.json), GGUF's eot / eom ids.
  std::vector<int32_t> eos_ids;
  GenerationDefaults generation;

  // Checks that every field is in range and consistent (heads divide, dims agree,
  // sizes are sane so that no tensor size computation overflows).
  absl::Status Validate() const;

  // The attention window of layer `layer`: sliding_window where it applies, else 0 (full).
  int64_t LayerWindow(int64_t layer) const;

  // Multi-line human-readable summary.
  std::string DebugString() const;
};

absl::string_view ArchitectureName(Architecture a);

}  // namespace llmserve
