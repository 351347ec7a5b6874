// TokenizerSpecFromGguf: synthetic vocabularies and llama.cpp's vocab-only GGUF files.
#include "model/formats/gguf_tokenizer.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/gguf_tiny_models.h"
#include "tests/util/gguf_writer.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

using ::llmserve::testing::GgufWriter;

// A vocab-only GGUF; `extra` adds or replaces keys (each key is written once).
struct Vocab {
  std::string model = "gpt2";
  std::optional<std::string> pre;
  std::vector<std::string> tokens = {"a", "b", "ab", "<|end|>"};
  std::optional<std::vector<std::string>> merges = std::vector<std::string>{"a b"};
  std::optional<std::vector<float>> scores;
  std::optional<std::vector<int32_t>> types = std::vector<int32_t>{1, 1, 1, 3};
  std::optional<uint32_t> bos, eos, unk, pad;
  bool write_tokens = true;
  std::function<void(GgufWriter&)> extra;

  absl::StatusOr<TokenizerSpec> Spec() const {
    GgufWriter w;
    if (!model.empty()) w.String("tokenizer.ggml.model", model);
    if (pre) w.String("tokenizer.ggml.pre", *pre);
    if (write_tokens) w.StringArray("tokenizer.ggml.tokens", tokens);
    if (merges) w.StringArray("tokenizer.ggml.merges", *merges);
    if (scores) w.Array<float>("tokenizer.ggml.scores", GgufType::kF32, *scores);
    if (types) w.Array<int32_t>("tokenizer.ggml.token_type", GgufType::kI32, *types);
    if (bos) w.U32("tokenizer.ggml.bos_token_id", *bos);
    if (eos) w.U32("tokenizer.ggml.eos_token_id", *eos);
    if (unk) w.U32("tokenizer.ggml.unknown_token_id", *unk);
    if (pad) w.U32("tokenizer.ggml.padding_token_id", *pad);
    if (extra) extra(w);
    bytes_ = w.Build().bytes;
    auto g = GgufFile::ParseBytes(bytes_, "vocab.gguf");
    if (!g.ok()) return g.status();
    return TokenizerSpecFromGguf(**g);
  }
  mutable std::vector<uint8_t> bytes_;
};

TEST(GgufTokenizerTest, SentencePieceFromTinyLlama) {
  const auto built = ::llmserve::testing::TinyLlamaWriter().Build();
  auto g = GgufFile::ParseBytes(built.bytes, "tiny.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  auto spec = TokenizerSpecFromGguf(**g);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->kind, TokenizerKind::kSentencePiece);
  EXPECT_EQ(spec->source, "tiny.gguf");
  ASSERT_EQ(spec->tokens.size(), 12u);
  EXPECT_EQ(spec->tokens[5], "\xe2\x96\x81" "a");
  ASSERT_EQ(spec->scores.size(), 12u);
  EXPECT_EQ(spec->scores[11], -7.0f);
  ASSERT_EQ(spec->types.size(), 12u);
  EXPECT_EQ(spec->types[0], TokenType::kUnknown);
  EXPECT_EQ(spec->types[1], TokenType::kControl);
  EXPECT_EQ(spec->types[3], TokenType::kByte);
  EXPECT_EQ(spec->types[7], TokenType::kNormal);
  EXPECT_TRUE(spec->merges.empty());
  EXPECT_EQ(spec->bos_id, 1);
  EXPECT_EQ(spec->eos_id, 2);
  EXPECT_EQ(spec->unk_id, 0);
  EXPECT_EQ(spec->pad_id, -1);
  EXPECT_TRUE(spec->add_bos);           // llama default
  EXPECT_TRUE(spec->add_space_prefix);  // default
  EXPECT_TRUE(spec->byte_fallback);     // it has <0xXX> byte tokens
}

TEST(GgufTokenizerTest, ByteLevelBpeFromTinyGpt2) {
  const auto built = ::llmserve::testing::TinyGpt2Writer().Build();
  auto g = GgufFile::ParseBytes(built.bytes, "gpt2.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  auto spec = TokenizerSpecFromGguf(**g);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->kind, TokenizerKind::kByteLevelBpe);
  EXPECT_EQ(spec->tokens.size(), 10u);
  EXPECT_EQ(spec->merges, (std::vector<std::string>{"a b", "\xc4\xa0 a", "\xc4\xa0 b", "ab c", "\xc4\xa0 ab"}));
  EXPECT_TRUE(spec->scores.empty());
  EXPECT_EQ(spec->pretokenizer, "gpt2");
  EXPECT_FALSE(spec->ignore_merges);
  EXPECT_FALSE(spec->nfc);
  EXPECT_FALSE(spec->add_bos);  // gpt2 default
  EXPECT_EQ(spec->bos_id, 8);
  EXPECT_EQ(spec->types[8], TokenType::kControl);
}

TEST(GgufTokenizerTest, PretokenizerNames) {
  struct Case {
    std::optional<std::string> pre;
    std::string name;
    bool ignore_merges, nfc, add_bos;
  };
  // Mapping per llama.cpp's llama-vocab.cpp: llama3 family ignores merges and adds BOS;
  // dbrx and smaug-bpe share llama3's regex only; olmo uses GPT-2's regex.
  const Case cases[] = {
      {std::nullopt, "gpt2", false, false, false},       {"default", "gpt2", false, false, false},
      {"gpt-2", "gpt2", false, false, false},            {"olmo", "gpt2", false, false, false},
      {"llama3", "llama3", true, false, true},           {"llama-bpe", "llama3", true, false, true},
      {"dbrx", "llama3", false, false, false},           {"smaug-bpe", "llama3", false, false, false},
      {"qwen2", "qwen2", false, true, false},            {"deepseek-llm", "deepseek-llm", false, false, false},
      {"deepseek-coder", "deepseek-coder", false, false, false}, {"falcon", "falcon", false, false, false},
      {"starcoder", "starcoder", false, false, false},   {"mpt", "mpt", false, false, false},
      {"refact", "refact", false, false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pre.value_or("(absent)"));
    Vocab v;
    v.pre = c.pre;
    auto spec = v.Spec();
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->pretokenizer, c.name);
    EXPECT_EQ(spec->ignore_merges, c.ignore_merges);
    EXPECT_EQ(spec->nfc, c.nfc);
    EXPECT_EQ(spec->add_bos, c.add_bos);
  }
  Vocab unknown;
  unknown.pre = "chatglm-bpe";
  auto s = unknown.Spec();
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(s.status().message().find("chatglm-bpe"), std::string::npos);
  EXPECT_NE(s.status().message().find("vocab.gguf"), std::string::npos);
}

TEST(GgufTokenizerTest, ExplicitFlags) {
  Vocab spm;
  spm.model = "llama";
  spm.merges.reset();
  spm.scores = std::vector<float>{0, -1, -2, 0};
  spm.extra = [](GgufWriter& w) {
    w.Bool("tokenizer.ggml.add_space_prefix", false);
    w.Bool("tokenizer.ggml.add_bos_token", false);
  };
  auto s = spm.Spec();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->add_space_prefix);
  EXPECT_FALSE(s->add_bos);
  EXPECT_FALSE(s->byte_fallback);  // no byte tokens
}

TEST(GgufTokenizerTest, InconsistentMetadataIsRejected) {
  auto expect_invalid = [](const Vocab& v, const std::string& needle) {
    auto s = v.Spec();
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << needle << ": " << s.status();
    EXPECT_NE(s.status().message().find(needle), std::string::npos) << s.status();
    EXPECT_NE(s.status().message().find("vocab.gguf"), std::string::npos) << s.status();
  };
  Vocab short_types;
  short_types.types = std::vector<int32_t>{1, 1, 1};
  expect_invalid(short_types, "token_type");
  Vocab bad_type;
  bad_type.types = std::vector<int32_t>{1, 1, 9, 1};
  expect_invalid(bad_type, "token_type[2]");
  Vocab bad_scores;
  bad_scores.model = "llama";
  bad_scores.scores = std::vector<float>{0, 0};
  expect_invalid(bad_scores, "scores");
  Vocab bos_out;
  bos_out.bos = 4;
  expect_invalid(bos_out, "bos_token_id");
  Vocab pad_out;
  pad_out.pad = 1000;
  expect_invalid(pad_out, "padding_token_id");
  Vocab no_merges;
  no_merges.merges.reset();
  expect_invalid(no_merges, "tokenizer.ggml.merges");
  Vocab empty;
  empty.tokens.clear();
  empty.types.reset();
  expect_invalid(empty, "empty");
  Vocab no_tokens;
  no_tokens.write_tokens = false;
  expect_invalid(no_tokens, "tokenizer.ggml.tokens");
  Vocab tokens_wrong_type;
  tokens_wrong_type.write_tokens = false;
  tokens_wrong_type.extra = [](GgufWriter& w) { w.U32("tokenizer.ggml.tokens", 1); };
  expect_invalid(tokens_wrong_type, "tokenizer.ggml.tokens");
  Vocab no_model;
  no_model.model = "";
  expect_invalid(no_model, "tokenizer.ggml.model");
}

TEST(GgufTokenizerTest, OtherModelsAreUnimplemented) {
  for (const char* model : {"bert", "t5", "rwkv", "none"}) {
    Vocab v;
    v.model = model;
    auto s = v.Spec();
    EXPECT_EQ(s.status().code(), absl::StatusCode::kUnimplemented) << model;
    EXPECT_NE(s.status().message().find(std::string("'") + model + "'"), std::string::npos) << s.status();
  }
}

TEST(GgufTokenizerTest, SharedTinyRandomLlama) {
  LLMSERVE_REQUIRE_ASSET(path, "models/gguf/llama-2-tiny-random.gguf");
  auto g = GgufFile::Open(path);
  ASSERT_TRUE(g.ok()) << g.status();
  auto spec = TokenizerSpecFromGguf(**g);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->kind, TokenizerKind::kSentencePiece);
  EXPECT_EQ(spec->source, path);
  ASSERT_EQ(spec->tokens.size(), 32000u);
  EXPECT_EQ(spec->tokens[1], "<s>");
  EXPECT_EQ(spec->tokens[3], "<0x00>");
  EXPECT_EQ(spec->scores[31999], -31740.0f);
  EXPECT_EQ(spec->types[3], TokenType::kByte);
  EXPECT_EQ(spec->bos_id, 1);
  EXPECT_EQ(spec->eos_id, 2);
  EXPECT_EQ(spec->unk_id, 0);
  EXPECT_TRUE(spec->byte_fallback);
}

// Expectations read from each file's metadata with an independent Python struct dump.
struct VocabFile {
  const char* file;
  TokenizerKind kind;
  const char* pretokenizer;  // byte-level BPE only
  size_t tokens, merges;
  int32_t bos, eos;
  bool add_bos;
};

TEST(GgufTokenizerTest, LlamaCppVocabFiles) {
  const VocabFile files[] = {
      {"llama-spm", TokenizerKind::kSentencePiece, "", 32000, 0, 1, 2, true},
      {"phi-3", TokenizerKind::kSentencePiece, "", 32064, 0, 1, 32000, true},
      {"gpt-2", TokenizerKind::kByteLevelBpe, "gpt2", 50257, 50000, 50256, 50256, false},
      {"deepseek-llm", TokenizerKind::kByteLevelBpe, "deepseek-llm", 102400, 99757, 100000, 100001, true},
      {"deepseek-coder", TokenizerKind::kByteLevelBpe, "deepseek-coder", 32256, 31757, 32013, 32014, true},
      {"falcon", TokenizerKind::kByteLevelBpe, "falcon", 65024, 64784, 11, 11, false},
      {"starcoder", TokenizerKind::kByteLevelBpe, "starcoder", 49152, 48872, 0, 0, false},
      {"mpt", TokenizerKind::kByteLevelBpe, "mpt", 50432, 50009, 0, 0, false},
      {"refact", TokenizerKind::kByteLevelBpe, "refact", 49216, 48891, 0, 0, false},
  };
  for (const VocabFile& f : files) {
    SCOPED_TRACE(f.file);
    LLMSERVE_REQUIRE_ASSET(path, std::string("models/tokenizers/gguf/ggml-vocab-") + f.file + ".gguf");
    auto g = GgufFile::Open(path);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_TRUE((*g)->tensors().empty());
    auto spec = TokenizerSpecFromGguf(**g);
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->kind, f.kind);
    EXPECT_EQ(spec->tokens.size(), f.tokens);
    EXPECT_EQ(spec->types.size(), f.tokens);
    EXPECT_EQ(spec->merges.size(), f.merges);
    EXPECT_EQ(spec->bos_id, f.bos);
    EXPECT_EQ(spec->eos_id, f.eos);
    EXPECT_EQ(spec->add_bos, f.add_bos);
    // Of these files only phi-3's carries tokenizer.chat_template.
    EXPECT_EQ(spec->chat_template.find("<|assistant|>") != std::string::npos, std::string(f.file) == "phi-3");
    if (f.kind == TokenizerKind::kByteLevelBpe) {
      EXPECT_EQ(spec->pretokenizer, f.pretokenizer);
      EXPECT_TRUE(spec->scores.empty());
    } else {
      EXPECT_EQ(spec->scores.size(), f.tokens);
      EXPECT_TRUE(spec->byte_fallback);
    }
  }
  LLMSERVE_REQUIRE_ASSET(bert, "models/tokenizers/gguf/ggml-vocab-bert-bge.gguf");
  auto g = GgufFile::Open(bert);
  ASSERT_TRUE(g.ok()) << g.status();
  auto spec = TokenizerSpecFromGguf(**g);
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(spec.status().message().find("bert"), std::string::npos);
}

}  // namespace
}  // namespace llmserve
