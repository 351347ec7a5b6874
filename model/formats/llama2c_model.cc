#include "model/formats/llama2c_model.h"

#include <filesystem>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/byte_reader.h"
#include "model/checked_math.h"
#include "model/mapped_file.h"

namespace llmserve {
namespace {

constexpr uint32_t kMagic = 0x616b3432;  // "ak42"
constexpr uint64_t kV1HeaderBytes = 256;

struct Header {
  int32_t dim = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, vocab = 0, seq_len = 0;
  int version = 0;
  bool shared = true;
  uint64_t header_bytes = 28;

  std::string ToString() const {
    return absl::StrCat("version=", version, " dim=", dim, " hidden_dim=", hidden, " n_layers=", layers,
                        " n_heads=", heads, " n_kv_heads=", kv_heads, " vocab_size=", vocab, " seq_len=", seq_len);
  }
};

absl::StatusOr<Header> ReadHeader(ByteReader& r) {
  Header h;
  uint32_t magic = 0;
  if (absl::Status s = r.Read(&magic, "header"); !s.ok()) return s;
  if (magic == kMagic) {
    int32_t version = 0;
    if (absl::Status s = r.Read(&version, "version"); !s.ok()) return s;
    if (version != 1) {
      return absl::UnimplementedError(absl::StrCat(
          r.source(), ": llama2.c checkpoint version ", version,
          version == 2 ? " (int8 quantized) is not supported" : " is unknown", "; only versions 0 and 1 (fp32) load"));
    }
    h.version = 1;
    h.header_bytes = kV1HeaderBytes;
  } else if (absl::Status s = r.Seek(0, "header"); !s.ok()) {
    return s;
  }
  int32_t* fields[] = {&h.dim, &h.hidden, &h.layers, &h.heads, &h.kv_heads, &h.vocab, &h.seq_len};
  for (int32_t* f : fields) {
    if (absl::Status s = r.Read(f, "the 7-int header"); !s.ok()) return s;
  }
  if (h.version == 1) {
    uint8_t shared = 0;
    if (absl::Status s = r.Read(&shared, "shared_classifier flag"); !s.ok()) return s;
    if (shared > 1) return r.Error(absl::StrCat("shared_classifier flag is ", static_cast<int>(shared), ", expected 0 or 1"));
    h.shared = shared == 1;
    if (absl::Status s = r.Skip(kV1HeaderBytes - r.position(), "header padding"); !s.ok()) return s;
  }
  return h;
}

// Range and divisibility checks, before any size is computed.
absl::Status CheckHeader(const std::string& path, Header* h) {
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": bad llama2.c header: ", what, " (", h->ToString(), ")"));
  };
  auto in_range = [](int64_t v, int64_t hi) { return v >= 1 && v <= hi; };
  if (!in_range(h->dim, int64_t{1} << 20)) return bad("dim out of range");
  if (!in_range(h->hidden, int64_t{1} << 22)) return bad("hidden_dim out of range");
  if (!in_range(h->layers, 1024)) return bad("n_layers out of range");
  if (!in_range(h->heads, 4096)) return bad("n_heads out of range");
  if (!in_range(h->kv_heads, h->heads)) return bad("n_kv_heads must be in [1, n_heads]");
  if (!in_range(h->seq_len, int64_t{1} << 24)) return bad("seq_len out of range");
  constexpr int32_t kMaxVocab = 1 << 24;
  if (h->version == 0 && h->vocab < 0 && h->vocab >= -kMaxVocab) {  // untied classifier
    h->vocab = -h->vocab;
    h->shared = false;
  }
  if (!in_range(h->vocab, kMaxVocab)) return bad("vocab_size out of range");
  if (h->dim % h->heads != 0) return bad("n_heads does not divide dim");
  if (h->heads % h->kv_heads != 0) return bad("n_kv_heads does not divide n_heads");
  if ((h->dim / h->heads) % 2 != 0) return bad("head size (dim / n_heads) is odd");
  return absl::OkStatus();
}

// Sums products of sizes with overflow checks.
class SizeSum {
 public:
  void Add(std::initializer_list<uint64_t> factors) {
    std::optional<uint64_t> p = 1;
    for (uint64_t f : factors) p = p ? CheckedMul(*p, f) : std::nullopt;
    total_ = (p && total_) ? CheckedAdd(*total_, *p) : std::nullopt;
  }
  std::optional<uint64_t> total() const { return total_; }

 private:
  std::optional<uint64_t> total_ = 0;
};

}  // namespace

namespace {

// The checked header of `file` (at `path`), whose size must be what the header implies.
absl::StatusOr<Header> ReadCheckedHeader(const MappedFile& file, const std::string& path) {
  ByteReader reader(file.bytes(), path);
  auto header = ReadHeader(reader);
  if (!header.ok()) return header.status();
  Header h = *header;
  if (absl::Status s = CheckHeader(path, &h); !s.ok()) return s;

  const uint64_t dim = h.dim, hidden = h.hidden, layers = h.layers, vocab = h.vocab;
  const uint64_t head_size = dim / h.heads;
  const uint64_t kv_dim = head_size * h.kv_heads;
  const uint64_t freq_floats = h.version == 0 ? uint64_t(h.seq_len) * (head_size / 2) * 2 : 0;
  SizeSum floats;
  floats.Add({vocab, dim});                                  // token embedding
  floats.Add({layers, dim, 2});                              // rms_att, rms_ffn
  floats.Add({layers, dim, dim, 2});                         // wq, wo
  floats.Add({layers, kv_dim, dim, 2});                      // wk, wv
  floats.Add({layers, hidden, dim, 3});                      // w1, w2, w3
  floats.Add({dim});                                         // rms_final
  floats.Add({freq_floats});                                 // freq_cis (v0)
  if (!h.shared) floats.Add({vocab, dim});                   // wcls
  std::optional<uint64_t> bytes = floats.total() ? CheckedMul(*floats.total(), 4) : std::nullopt;
  std::optional<uint64_t> expected = bytes ? CheckedAdd(*bytes, h.header_bytes) : std::nullopt;
  if (!expected) return absl::InvalidArgumentError(absl::StrCat(path, ": header sizes overflow (", h.ToString(), ")"));
  if (*expected != file.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": file is ", file.size(), " bytes but the header (", h.ToString(), ") implies ", *expected,
        " bytes", file.size() < *expected ? " (truncated file)" : " (trailing bytes)"));
  }
  return h;
}

}  // namespace

absl::Status ProbeLlama2cModel(const std::string& path) {
  auto file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  return ReadCheckedHeader(**file, path).status();
}

absl::StatusOr<std::unique_ptr<ModelWeights>> LoadLlama2cModel(const std::string& path) {
  auto file_or = MappedFile::Open(path);
  if (!file_or.ok()) return file_or.status();
  std::shared_ptr<MappedFile> file = *std::move(file_or);
  auto header = ReadCheckedHeader(*file, path);
  if (!header.ok()) return header.status();
  const Header& h = *header;
  const uint64_t head_size = static_cast<uint64_t>(h.dim / h.heads);
  const uint64_t kv_dim = head_size * static_cast<uint64_t>(h.kv_heads);
  const uint64_t freq_floats = h.version == 0 ? uint64_t(h.seq_len) * (head_size / 2) * 2 : 0;

  auto weights = std::make_unique<ModelWeights>();
  ModelConfig& c = weights->config;
  c.name = std::filesystem::path(path).stem().string();
  c.format = "llama2c";
  c.arch = Architecture::kLlama;
  c.vocab_size = h.vocab;
  c.hidden_size = h.dim;
  c.num_layers = h.layers;
  c.num_heads = h.heads;
  c.num_kv_heads = h.kv_heads;
  c.head_dim = static_cast<int64_t>(head_size);
  c.ffn_dim = h.hidden;
  c.norm = NormKind::kRmsNorm;
  c.norm_eps = 1e-5f;
  c.position = PositionKind::kRope;
  c.rope_layout = RopeLayout::kInterleaved;
  c.rope_theta = 10000.0f;
  c.rope_dim = c.head_dim;
  c.activation = Activation::kSilu;
  c.tied_embeddings = h.shared;
  c.context_length = h.seq_len;
  c.bos_id = 1;
  c.eos_id = 2;
  if (absl::Status s = c.Validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  }

  // Every view below lies inside the file: the total size was checked above.
  uint64_t offset = h.header_bytes;
  absl::Status status;
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    uint64_t n = 1;
    for (int64_t d : shape) n *= static_cast<uint64_t>(d);
    TensorView t{std::move(name), DType::kF32, std::move(shape), file->data() + offset, n * 4};
    offset += n * 4;
    if (status.ok()) status = weights->Add(std::move(t));
  };
  auto stacked = [&](const char* name, std::vector<int64_t> shape) {
    for (int64_t i = 0; i < h.layers; ++i) add(absl::StrCat("blk.", i, ".", name, ".weight"), shape);
  };
  const int64_t d = h.dim, f = h.hidden, kv = static_cast<int64_t>(kv_dim), v = h.vocab;
  if (h.version == 0) {
    add("token_embd.weight", {v, d});
    stacked("attn_norm", {d});
  } else {
    stacked("attn_norm", {d});
    stacked("ffn_norm", {d});
    add("output_norm.weight", {d});
    add("token_embd.weight", {v, d});
  }
  stacked("attn_q", {d, d});
  stacked("attn_k", {kv, d});
  stacked("attn_v", {kv, d});
  stacked("attn_output", {d, d});
  if (h.version == 0) stacked("ffn_norm", {d});
  stacked("ffn_gate", {f, d});
  stacked("ffn_down", {d, f});
  stacked("ffn_up", {f, d});
  if (h.version == 0) {
    add("output_norm.weight", {d});
    offset += freq_floats * 4;  // freq_cis_real, freq_cis_imag: recomputed at run time
  }
  if (!h.shared) add("output.weight", {v, d});
  if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", status.message()));
  if (offset != file->size()) {
    return absl::InternalError(absl::StrCat(path, ": tensor layout ends at ", offset, ", file has ", file->size()));
  }
  weights->KeepAlive(std::move(file));
  if (absl::Status s = weights->CheckComplete(path); !s.ok()) return s;
  return weights;
}

}  // namespace llmserve
