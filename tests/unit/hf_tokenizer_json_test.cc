// HF tokenizer.json reader: the real SentencePiece-style files (Llama 2, Mistral, Phi-3),
// byte-level tokenizer.json files assembled at test time from the real GPT-2 / Llama 3 /
// Qwen2 vocabularies in HF's serialization (checked against llama.cpp's vectors), and
// malformed or unsupported files.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "model/tokenizer/bpe_tokenizer.h"
#include "model/tokenizer/hf_tokenizer_json.h"
#include "model/tokenizer/spm_tokenizer.h"
#include "nlohmann/json.hpp"
#include "tests/util/test_assets.h"
#include "tests/util/tokenizer_golden.h"

namespace llmserve {
namespace {

using nlohmann::json;
using ::llmserve::testing::ExpectMatchesVectors;
using ::llmserve::testing::ReadTestFile;
using ::llmserve::testing::RepoVectors;

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

TEST(HfTokenizerJsonTest, Llama2IsSentencePieceStyle) {
  LLMSERVE_REQUIRE_ASSET(path, "models/tokenizers/hf/llama2/tokenizer.json");
  auto spec = TokenizerSpecFromHfJson(path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->kind, TokenizerKind::kSentencePiece);
  EXPECT_EQ(spec->tokens.size(), 32000u);
  EXPECT_EQ(spec->merges.size(), 61249u);
  EXPECT_EQ(spec->merges.front(), "\xE2\x96\x81 t");  // "▁ t"
  EXPECT_TRUE(spec->scores.empty());
  EXPECT_TRUE(spec->add_space_prefix);
  EXPECT_TRUE(spec->byte_fallback);
  EXPECT_TRUE(spec->add_bos);  // tokenizer_config.json: add_bos_token true
  EXPECT_EQ(spec->bos_id, 1);
  EXPECT_EQ(spec->eos_id, 2);
  EXPECT_EQ(spec->unk_id, 0);
  EXPECT_EQ(spec->types[0], TokenType::kUnknown);
  EXPECT_EQ(spec->types[1], TokenType::kControl);
  EXPECT_EQ(spec->types[2], TokenType::kControl);
  EXPECT_EQ(spec->tokens[13], "<0x0A>");
  EXPECT_EQ(spec->types[13], TokenType::kByte);
  EXPECT_EQ(spec->tokens[278], "\xE2\x96\x81the");
  EXPECT_EQ(spec->types[278], TokenType::kNormal);
}

// End to end with the SentencePiece tokenizer: llama.cpp's llama-spm vectors.
TEST(HfTokenizerJsonTest, Llama2ReproducesLlamaSpmVectors) {
  LLMSERVE_REQUIRE_ASSET(path, "models/tokenizers/hf/llama2/tokenizer.json");
  LLMSERVE_REQUIRE_ASSET(inp, "golden/tokenizers/ggml-vocab-llama-spm.gguf.inp");
  auto spec = TokenizerSpecFromHfJson(path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto tok = NewSentencePieceTokenizer(*std::move(spec));
  ASSERT_TRUE(tok.ok()) << tok.status();
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesVectors(**tok, inp.substr(0, inp.size() - 4), /*roundtrip=*/false));
}

TEST(HfTokenizerJsonTest, Phi3AndMistral) {
  LLMSERVE_REQUIRE_ASSET(phi3, "models/tokenizers/hf/phi-3-mini/tokenizer.json");
  LLMSERVE_REQUIRE_ASSET(mistral, "models/tokenizers/hf/mistral-7b-v0.2/tokenizer.json");
  auto spec = TokenizerSpecFromHfJson(phi3);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->kind, TokenizerKind::kSentencePiece);
  ASSERT_EQ(spec->tokens.size(), 32011u);  // 32000 + added tokens 32000..32010
  EXPECT_EQ(spec->tokens[32010], "<|user|>");
  EXPECT_EQ(spec->types[32010], TokenType::kControl);
  EXPECT_EQ(spec->tokens[32007], "<|end|>");
  EXPECT_EQ(spec->types[2], TokenType::kUserDefined);  // "</s>" is added with special: false
  EXPECT_FALSE(spec->add_bos);                          // add_bos_token: false
  EXPECT_EQ(spec->eos_id, 32000);                       // eos_token: <|endoftext|>
  EXPECT_EQ(spec->bos_id, 1);
  EXPECT_NE(spec->chat_template.find("'<|user|>\n' + message['content'] + '<|end|>\n'"), std::string::npos)
      << spec->chat_template;
  auto m = TokenizerSpecFromHfJson(mistral);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->tokens.size(), 32000u);
  EXPECT_EQ(m->merges.size(), 58980u);
  EXPECT_TRUE(m->add_bos);
  EXPECT_EQ(m->bos_id, 1);
  EXPECT_EQ(m->eos_id, 2);
}

// HF's serialization of a byte-level BPE model, from a vocab.json and merges file.
json ByteLevelJson(const std::string& vocab_path, const std::string& merges_path, bool merges_as_pairs) {
  json j;
  j["version"] = "1.0";
  j["added_tokens"] = json::array();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  j["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}};
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  json model = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
                {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}};
  model["vocab"] = json::parse(ReadTestFile(vocab_path));
  json merges = json::array();
  std::istringstream lines(ReadTestFile(merges_path));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    const size_t sp = line.find(' ');
    if (merges_as_pairs) {
      merges.push_back(json::array({line.substr(0, sp), line.substr(sp + 1)}));
    } else {
      merges.push_back(line);
    }
  }
  model["merges"] = merges;
  j["model"] = model;
  return j;
}

json Added(int id, const std::string& content) {
  return {{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", true}};
}

json SplitThenByteLevel(const std::string& regex) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           json::array({{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
                        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}})}};
}

std::unique_ptr<Tokenizer> ByteLevelFromJson(const json& j, const std::string& name, TokenizerSpec* out = nullptr) {
  const std::string dir = ::llmserve::testing::ScratchDir("hf_json_" + name);
  const std::string path = dir + "/tokenizer.json";
  WriteFile(path, j.dump());
  auto spec = TokenizerSpecFromHfJson(path);
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return nullptr;
  EXPECT_EQ(spec->kind, TokenizerKind::kByteLevelBpe);
  if (out != nullptr) *out = *spec;
  auto tok = NewByteLevelBpeTokenizer(*std::move(spec));
  EXPECT_TRUE(tok.ok()) << tok.status();
  std::filesystem::remove_all(dir);
  return tok.ok() ? *std::move(tok) : nullptr;
}

TEST(HfTokenizerJsonTest, Gpt2ByteLevelReproducesVectors) {
  LLMSERVE_REQUIRE_ASSET(vocab, "models/tokenizers/bpe/gpt2/vocab.json");
  LLMSERVE_REQUIRE_ASSET(merges, "models/tokenizers/bpe/gpt2/merges.txt");
  LLMSERVE_REQUIRE_ASSET(inp, "golden/tokenizers/ggml-vocab-gpt-2.gguf.inp");
  json j = ByteLevelJson(vocab, merges, /*merges_as_pairs=*/false);
  j["added_tokens"].push_back(Added(50256, "<|endoftext|>"));
  TokenizerSpec spec;
  auto tok = ByteLevelFromJson(j, "gpt2", &spec);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(spec.pretokenizer, "gpt2");
  EXPECT_EQ(spec.types[50256], TokenType::kControl);
  EXPECT_EQ(spec.eos_id, 50256);
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesVectors(*tok, inp.substr(0, inp.size() - 4), true));
}

TEST(HfTokenizerJsonTest, Llama3ByteLevelReproducesVectors) {
  LLMSERVE_REQUIRE_ASSET(vocab, "models/tokenizers/bpe/llama3/encoder.json");
  LLMSERVE_REQUIRE_ASSET(merges, "models/tokenizers/bpe/llama3/vocab.bpe");
  json j = ByteLevelJson(vocab, merges, /*merges_as_pairs=*/true);
  j["pre_tokenizer"] = SplitThenByteLevel(
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)");
  j["model"]["ignore_merges"] = true;
  j["added_tokens"] = json::array({Added(128000, "<|begin_of_text|>"), Added(128001, "<|end_of_text|>"),
                                   Added(128009, "<|eot_id|>")});
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", json::array({{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
                                                 {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}};
  TokenizerSpec spec;
  auto tok = ByteLevelFromJson(j, "llama3", &spec);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(spec.pretokenizer, "llama3");
  EXPECT_TRUE(spec.ignore_merges);
  EXPECT_TRUE(spec.add_bos);
  EXPECT_EQ(spec.bos_id, 128000);
  EXPECT_EQ(spec.eos_id, 128001);
  ASSERT_EQ(spec.tokens.size(), 128010u);  // ids 128002..128008 are named by nothing
  EXPECT_EQ(spec.types[128005], TokenType::kUnused);
  EXPECT_EQ(spec.types[128009], TokenType::kControl);
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesVectors(*tok, RepoVectors("ggml-vocab-llama-bpe.gguf"), true));
}

TEST(HfTokenizerJsonTest, Qwen2ByteLevelReproducesVectors) {
  LLMSERVE_REQUIRE_ASSET(vocab, "models/tokenizers/bpe/qwen2/vocab.json");
  LLMSERVE_REQUIRE_ASSET(merges, "models/tokenizers/bpe/qwen2/merges.txt");
  json j = ByteLevelJson(vocab, merges, /*merges_as_pairs=*/false);
  j["normalizer"] = {{"type", "NFC"}};
  j["pre_tokenizer"] = SplitThenByteLevel(
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)");
  j["added_tokens"] = json::array({Added(151643, "<|endoftext|>"), Added(151644, "<|im_start|>"),
                                   Added(151645, "<|im_end|>")});
  TokenizerSpec spec;
  auto tok = ByteLevelFromJson(j, "qwen2", &spec);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(spec.pretokenizer, "qwen2");
  EXPECT_TRUE(spec.nfc);
  EXPECT_FALSE(spec.add_bos);
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesVectors(*tok, RepoVectors("ggml-vocab-qwen2.gguf"), true));
}

TEST(HfTokenizerJsonTest, StarcoderDigitsAndSparseIds) {
  json j;
  j["model"] = {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 2}}}, {"merges", json::array()}};
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers", json::array({{{"type", "Digits"}, {"individual_digits", true}},
                                                       {{"type", "ByteLevel"}, {"add_prefix_space", false}}})}};
  j["added_tokens"] = json::array({Added(5, "<fim>")});
  j["added_tokens"][0]["special"] = false;
  TokenizerSpec spec;
  ASSERT_NE(ByteLevelFromJson(j, "starcoder", &spec), nullptr);
  EXPECT_EQ(spec.pretokenizer, "starcoder");
  ASSERT_EQ(spec.tokens.size(), 6u);
  EXPECT_EQ(spec.types[1], TokenType::kUnused);
  EXPECT_EQ(spec.types[4], TokenType::kUnused);
  EXPECT_EQ(spec.types[5], TokenType::kUserDefined);
  EXPECT_EQ(spec.tokens[5], "<fim>");
}

TEST(HfTokenizerJsonTest, UnsupportedAndMalformedFiles) {
  const std::string dir = ::llmserve::testing::ScratchDir("hf_json_bad");
  const std::string path = dir + "/tokenizer.json";
  auto status_of = [&](const std::string& content) {
    WriteFile(path, content);
    auto spec = TokenizerSpecFromHfJson(path);
    EXPECT_FALSE(spec.ok()) << content.substr(0, 200);
    if (!spec.ok()) {
      EXPECT_NE(spec.status().message().find(path), std::string::npos) << spec.status();
    }
    return spec.status();
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  const auto kUnimplemented = absl::StatusCode::kUnimplemented;
  absl::Status s = status_of(R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})");
  EXPECT_EQ(s.code(), kUnimplemented);
  EXPECT_NE(s.message().find("WordPiece"), std::string::npos);
  s = status_of(R"({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}})");
  EXPECT_EQ(s.code(), kUnimplemented);
  EXPECT_NE(s.message().find("Unigram"), std::string::npos);
  const std::string byte_level = R"("pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false})";
  WriteFile(path, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, " + byte_level + "}");
  EXPECT_TRUE(TokenizerSpecFromHfJson(path).ok());  // the minimal valid file, for contrast
  EXPECT_EQ(status_of("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": \"x\"}, \"merges\": []}, " + byte_level + "}").code(),
            kInvalid);
  EXPECT_EQ(status_of("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [7]}, " + byte_level + "}").code(),
            kInvalid);
  EXPECT_EQ(status_of("{\"model\": {\"type\": \"BPE\", \"vocab\": [], \"merges\": []}, " + byte_level + "}").code(),
            kInvalid);
  EXPECT_EQ(status_of("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 999999999}, \"merges\": []}, " + byte_level + "}")
                .code(),
            kInvalid);
  EXPECT_EQ(status_of(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": [{"id": "x"}]})")
                .code(),
            kInvalid);
  EXPECT_EQ(status_of(R"({"model": 3})").code(), kInvalid);
  EXPECT_EQ(status_of("[1, 2]").code(), kInvalid);
  EXPECT_EQ(status_of("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, "
                      "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
                      "\"pattern\": {\"Regex\": \"[a-z]+\"}, \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", "
                      "\"use_regex\": false}]}}")
                .code(),
            kUnimplemented);
  EXPECT_EQ(status_of("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, "
                      "\"pre_tokenizer\": {\"type\": \"Whitespace\"}}")
                .code(),
            kUnimplemented);
  EXPECT_EQ(TokenizerSpecFromHfJson(dir + "/nope.json").status().code(), absl::StatusCode::kNotFound);
}

// Every truncation of a real tokenizer.json is rejected cleanly (no crash, no exception).
TEST(HfTokenizerJsonTest, TruncatedFilesAreRejected) {
  LLMSERVE_REQUIRE_ASSET(src, "models/tokenizers/hf/phi-3-mini/tokenizer.json");
  const std::string full = ReadTestFile(src);
  ASSERT_GT(full.size(), 1000u);
  const std::string dir = ::llmserve::testing::ScratchDir("hf_json_trunc");
  const std::string path = dir + "/tokenizer.json";
  for (size_t cut : {size_t{0}, size_t{1}, size_t{17}, size_t{100}, full.size() / 3, full.size() / 2,
                     full.size() - 2, full.size() - 1}) {
    WriteFile(path, full.substr(0, cut));
    auto spec = TokenizerSpecFromHfJson(path);
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << "cut at " << cut;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace llmserve
