#include "model/tokenizer/tokenizer_loader.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "model/formats/gguf_file.h"
#include "model/formats/gguf_tokenizer.h"
#include "model/tokenizer/hf_tokenizer_json.h"
#include "model/tokenizer/llama2c_tokenizer.h"
#include "model/tokenizer/vocab_files.h"

namespace llmserve {
namespace {

namespace fs = std::filesystem;

bool Exists(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool HasGgufMagic(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

absl::StatusOr<TokenizerSpec> FromGguf(const std::string& path) {
  auto gguf = GgufFile::Open(path);
  if (!gguf.ok()) return gguf.status();
  return TokenizerSpecFromGguf(**gguf);
}

// Picks the pre-tokenizer for a vocab+merges pair that does not name one.
std::string GuessPretokenizer(const fs::path& vocab, const TokenizerLoadOptions& options) {
  if (!options.pretokenizer.empty()) return options.pretokenizer;
  const fs::path config = vocab.parent_path() / "tokenizer_config.json";
  if (Exists(config)) {
    std::ifstream in(config);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("Qwen2Tokenizer") != std::string::npos) return "qwen2";
  }
  // Llama 3's 128000 base tokens end with this piece; GPT-2's vocab has no such entry.
  std::ifstream in(vocab);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.find("\": 127999") != std::string::npos || text.find("\":127999") != std::string::npos) return "llama3";
  return "gpt2";
}

absl::StatusOr<TokenizerSpec> FromVocabMerges(const fs::path& vocab, const fs::path& merges,
                                              const TokenizerLoadOptions& options) {
  if (!Exists(vocab)) return absl::NotFoundError(absl::StrCat(vocab.string(), ": vocabulary file not found"));
  if (!Exists(merges)) {
    return absl::NotFoundError(absl::StrCat(merges.string(), ": merges file not found beside ", vocab.string()));
  }
  return TokenizerSpecFromVocabMerges(vocab.string(), merges.string(), GuessPretokenizer(vocab, options));
}

absl::StatusOr<TokenizerSpec> FromDirectory(const fs::path& dir, const TokenizerLoadOptions& options) {
  if (Exists(dir / "tokenizer.json")) return TokenizerSpecFromHfJson((dir / "tokenizer.json").string());
  if (Exists(dir / "vocab.json")) return FromVocabMerges(dir / "vocab.json", dir / "merges.txt", options);
  if (Exists(dir / "encoder.json")) return FromVocabMerges(dir / "encoder.json", dir / "vocab.bpe", options);
  if (Exists(dir / "tokenizer.bin")) {
    return TokenizerSpecFromLlama2cBin((dir / "tokenizer.bin").string(), options.model_vocab_size);
  }
  std::error_code ec;
  std::vector<fs::path> ggufs;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".gguf") ggufs.push_back(entry.path());
  }
  if (ggufs.size() == 1) return FromGguf(ggufs[0].string());
  return absl::NotFoundError(absl::StrCat(
      dir.string(), ": no tokenizer found (looked for tokenizer.json, vocab.json+merges.txt, "
                    "encoder.json+vocab.bpe, tokenizer.bin, or a single *.gguf)"));
}

}  // namespace

absl::StatusOr<TokenizerSpec> LoadTokenizerSpec(const std::string& path, const TokenizerLoadOptions& options) {
  const fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) return FromDirectory(p, options);
  if (!Exists(p)) return absl::NotFoundError(absl::StrCat(path, ": no such tokenizer file"));
  const std::string name = p.filename().string();
  const fs::path dir = p.parent_path();
  if (HasGgufMagic(p)) return FromGguf(path);
  if (name == "vocab.json") return FromVocabMerges(p, dir / "merges.txt", options);
  if (name == "encoder.json") return FromVocabMerges(p, dir / "vocab.bpe", options);
  if (name == "merges.txt") return FromVocabMerges(dir / "vocab.json", p, options);
  if (name == "vocab.bpe") return FromVocabMerges(dir / "encoder.json", p, options);
  if (p.extension() == ".json") return TokenizerSpecFromHfJson(path);
  return TokenizerSpecFromLlama2cBin(path, options.model_vocab_size);
}

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path,
                                                         const TokenizerLoadOptions& options) {
  absl::StatusOr<TokenizerSpec> spec = LoadTokenizerSpec(path, options);
  if (!spec.ok()) return spec.status();
  return CreateTokenizer(*std::move(spec));
}

}  // namespace llmserve
