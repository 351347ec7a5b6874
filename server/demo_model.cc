#include "server/demo_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/tokenizer/byte_level.h"

namespace llmserve {
namespace {

constexpr int32_t kBos = 256;
constexpr int32_t kEos = 257;
constexpr uint64_t kSeed = 0x6c6c6d7365727665ULL;  // "llmserve"

// splitmix64: tiny, well mixed, identical everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1), exactly representable (24 random bits).
  float Symmetric() { return static_cast<float>(Next() >> 40) * (2.0f / 16777216.0f) - 1.0f; }

 private:
  uint64_t state_;
};

// Each tensor's own stream, so a tensor's values do not depend on the others.
uint64_t TensorSeed(const std::string& name) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  return h ^ kSeed;
}

bool Printable(int64_t id) { return id == '\n' || (id >= 0x20 && id < 0x7f); }

// The values of one tensor, row-major over `shape`.
std::vector<float> TensorValues(const std::string& name, const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  const bool norm = name.find("_norm.") != std::string::npos;
  if (norm) {
    std::fill(v.begin(), v.end(), 1.0f);
    return v;
  }
  Rng rng(TensorSeed(name));
  const int64_t cols = shape.back();
  if (name == "output.weight") {
    // Logit std ~6 over printable bytes (hidden state has unit RMS); 0 for the rest.
    const float a = std::sqrt(108.0f / static_cast<float>(cols));
    for (int64_t r = 0; r < shape[0]; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const float x = rng.Symmetric() * a;
        v[static_cast<size_t>(r * cols + c)] = Printable(r) ? x : 0.0f;
      }
    }
    return v;
  }
  // Embeddings: uniform [-1, 1); linear layers: unit output variance for unit inputs.
  const float a = name == "token_embd.weight" ? 1.0f : std::sqrt(3.0f / static_cast<float>(cols));
  for (float& x : v) x = rng.Symmetric() * a;
  return v;
}

TokenizerSpec DemoTokenizerSpec() {
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kByteLevelBpe;  // no merges: every byte stays its own token
  spec.source = "demo model byte vocabulary";
  for (int b = 0; b < 256; ++b) {
    spec.tokens.push_back(byte_level::Encode(std::string(1, static_cast<char>(b))));
    spec.types.push_back(TokenType::kNormal);
  }
  spec.tokens.push_back("<s>");
  spec.types.push_back(TokenType::kControl);
  spec.tokens.push_back("</s>");
  spec.types.push_back(TokenType::kControl);
  spec.bos_id = kBos;
  spec.eos_id = kEos;
  spec.add_bos = true;
  spec.pretokenizer = "gpt2";
  return spec;
}

}  // namespace

ModelConfig DemoModelConfig() {
  ModelConfig c;
  c.name = "demo";
  c.format = "demo";
  c.arch = Architecture::kLlama;
  c.vocab_size = 258;
  c.hidden_size = 256;
  c.num_layers = 4;
  c.num_heads = 8;
  c.num_kv_heads = 4;
  c.head_dim = 32;
  c.ffn_dim = 768;
  c.norm = NormKind::kRmsNorm;
  c.norm_eps = 1e-5f;
  c.position = PositionKind::kRope;
  c.rope_layout = RopeLayout::kHalf;
  c.rope_theta = 10000.0f;
  c.rope_dim = 32;
  c.activation = Activation::kSilu;
  c.tied_embeddings = false;
  c.context_length = 2048;
  c.bos_id = kBos;
  c.eos_id = kEos;
  return c;
}

absl::StatusOr<DemoModel> MakeDemoModel() {
  DemoModel demo;
  demo.weights = std::make_unique<ModelWeights>();
  ModelWeights& w = *demo.weights;
  w.config = DemoModelConfig();
  if (absl::Status s = w.config.Validate(); !s.ok()) return s;
  for (const ExpectedTensor& e : ExpectedTensors(w.config)) {
    const std::vector<float> values = TensorValues(e.name, e.shape);
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    TensorView t;
    t.name = e.name;
    t.dtype = DType::kF32;
    t.shape = e.shape;
    t.nbytes = bytes.size();
    t.data = w.Own(std::move(bytes));
    if (absl::Status s = w.Add(std::move(t)); !s.ok()) return s;
  }
  if (absl::Status s = w.CheckComplete("demo model"); !s.ok()) return s;
  auto tok = CreateTokenizer(DemoTokenizerSpec());
  if (!tok.ok()) return tok.status();
  demo.tokenizer = *std::move(tok);
  return demo;
}

}  // namespace llmserve
