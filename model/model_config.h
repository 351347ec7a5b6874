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

enum class Architecture { kLlama, kGpt2 };
enum class NormKind { kRmsNorm, kLayerNorm };
enum class PositionKind { kRope, kLearned };
// How RoPE pairs dimensions inside a head:
//   kInterleaved: (0,1),(2,3),...  Meta / llama2.c / GGUF (Q,K rows permuted by convert).
//   kHalf:        (i, i+d/2)       HuggingFace "rotate_half" (GPT-NeoX style).
enum class RopeLayout { kInterleaved, kHalf };
enum class RopeScalingKind { kNone, kLinear, kLlama3 };
// kSilu => SwiGLU MLP (gate, up, down); kGeluTanh => GPT-2 MLP (up, gelu, down).
enum class Activation { kSilu, kGeluTanh };

struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::kNone;
  float factor = 1.0f;            // linear and llama3
  float low_freq_factor = 1.0f;   // llama3
  float high_freq_factor = 4.0f;  // llama3
  int64_t original_context = 0;   // llama3: original_max_position_embeddings
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

  // Multi-line human-readable summary.
  std::string DebugString() const;
};

absl::string_view ArchitectureName(Architecture a);

}  // namespace llmserve
