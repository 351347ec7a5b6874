// llama2.c tokenizer.bin -> SentencePiece spec, checked against llama.cpp's llama-spm vectors,
// run.c's golden stories260K output, a direct transcription of run.c's encode(), and
// corrupted files.
#include "model/tokenizer/llama2c_tokenizer.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "model/tokenizer/spm_tokenizer.h"
#include "tests/util/load_tokenizer.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<int32_t> ParseIds(const std::string& line) {
  std::vector<int32_t> ids;
  std::istringstream in(line);
  int32_t id;
  while (in >> id) ids.push_back(id);
  return ids;
}

// llama.cpp's test vectors: .inp = strings each followed by "\n__ggml_vocab_test__\n";
// .out = one line of space-separated ids per string.
struct VocabVector {
  std::string text;
  std::vector<int32_t> ids;
};
std::vector<VocabVector> ReadVocabVectors(const std::string& base) {
  const std::string inp = ReadAll(base + ".inp");
  const std::string out = ReadAll(base + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<VocabVector> v;
  size_t pos = 0;
  while (pos < inp.size()) {
    const size_t end = inp.find(sep, pos);
    if (end == std::string::npos) break;
    v.push_back({inp.substr(pos, end - pos), {}});
    pos = end + sep.size();
  }
  std::istringstream lines(out);
  std::string line;
  for (auto& vec : v) {
    if (!std::getline(lines, line)) break;
    vec.ids = ParseIds(line);
  }
  return v;
}

// The raw llama2.c vocabulary, read independently of the code under test.
struct RawVocab {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::unordered_map<std::string, int> index;
};
RawVocab ReadRaw(const std::string& path) {
  const std::string b = ReadAll(path);
  RawVocab v;
  size_t off = 4;
  while (off + 8 <= b.size()) {
    float score;
    int32_t len;
    std::memcpy(&score, b.data() + off, 4);
    std::memcpy(&len, b.data() + off + 4, 4);
    off += 8;
    v.index.emplace(b.substr(off, static_cast<size_t>(len)), static_cast<int>(v.pieces.size()));
    v.pieces.push_back(b.substr(off, static_cast<size_t>(len)));
    v.scores.push_back(score);
    off += static_cast<size_t>(len);
  }
  return v;
}

// A direct transcription of run.c's encode() (karpathy/llama2.c): dummy " " prefix for
// non-empty text, code points looked up or byte-encoded as byte+3, then repeatedly merge the
// adjacent pair whose concatenation has the highest score (strictly greater: leftmost wins).
std::vector<int32_t> RunCEncode(const RawVocab& v, const std::string& text, bool bos) {
  auto lookup = [&](const std::string& s) {
    auto it = v.index.find(s);
    return it == v.index.end() ? -1 : it->second;
  };
  std::vector<int32_t> t;
  if (bos) t.push_back(1);
  if (!text.empty()) t.push_back(lookup(" "));
  std::string buf;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c & 0xC0) != 0x80) buf.clear();
    buf += c;
    if (i + 1 < text.size() && (text[i + 1] & 0xC0) == 0x80 && buf.size() < 4) continue;
    const int id = lookup(buf);
    if (id != -1) {
      t.push_back(id);
    } else {
      for (char b : buf) t.push_back(static_cast<unsigned char>(b) + 3);
    }
    buf.clear();
  }
  while (true) {
    float best_score = -1e10f;
    int best_id = -1, best_idx = -1;
    for (size_t i = 0; i + 1 < t.size(); ++i) {
      const int id = lookup(v.pieces[static_cast<size_t>(t[i])] + v.pieces[static_cast<size_t>(t[i + 1])]);
      if (id != -1 && v.scores[static_cast<size_t>(id)] > best_score) {
        best_score = v.scores[static_cast<size_t>(id)];
        best_id = id;
        best_idx = static_cast<int>(i);
      }
    }
    if (best_idx == -1) break;
    t[static_cast<size_t>(best_idx)] = best_id;
    t.erase(t.begin() + best_idx + 1);
  }
  return t;
}

std::unique_ptr<Tokenizer> LoadOrDie(const std::string& path) { return testing::LoadTokenizerOrFail(path); }

TEST(Llama2cTokenizerTest, SpecFromLlama2Vocabulary) {
  LLMSERVE_REQUIRE_ASSET(path, "models/llama2c/tokenizer.bin");
  const RawVocab raw = ReadRaw(path);
  auto spec = TokenizerSpecFromLlama2cBin(path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->tokens.size(), raw.pieces.size());
  EXPECT_EQ(spec->tokens.size(), 32000u);
  EXPECT_EQ(spec->kind, TokenizerKind::kSentencePiece);
  EXPECT_EQ(spec->bos_id, 1);
  EXPECT_EQ(spec->eos_id, 2);
  EXPECT_EQ(spec->unk_id, 0);
  EXPECT_EQ(spec->tokens[0], "<unk>");
  EXPECT_EQ(spec->tokens[1], "<s>");
  EXPECT_EQ(spec->tokens[2], "</s>");
  EXPECT_EQ(spec->types[0], TokenType::kUnknown);
  EXPECT_EQ(spec->types[1], TokenType::kControl);
  EXPECT_EQ(spec->types[2], TokenType::kControl);
  EXPECT_TRUE(spec->add_bos);
  EXPECT_TRUE(spec->add_space_prefix);
  EXPECT_TRUE(spec->merges.empty());
  for (size_t i = 3; i < raw.pieces.size(); ++i) {
    // Raw pieces have " " for SentencePiece's "▁"; the spec has the "▁" back.
    std::string expected;
    for (char c : raw.pieces[i]) expected += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    ASSERT_EQ(spec->tokens[i], expected) << "token " << i;
    ASSERT_EQ(spec->scores[i], raw.scores[i]);
    const bool is_byte = raw.pieces[i].size() == 6 && raw.pieces[i].rfind("<0x", 0) == 0;
    ASSERT_EQ(spec->types[i] == TokenType::kByte, is_byte) << "token " << i;
  }
}

// llama.cpp's llama-spm vectors (from HF's LlamaTokenizer) reproduced from tokenizer.bin,
// and decoding gives the input back.
TEST(Llama2cTokenizerTest, LlamaSpmGoldenVectors) {
  LLMSERVE_REQUIRE_ASSET(path, "models/llama2c/tokenizer.bin");
  LLMSERVE_REQUIRE_ASSET(inp, "golden/tokenizers/ggml-vocab-llama-spm.gguf.inp");
  auto tok = LoadOrDie(path);
  ASSERT_NE(tok, nullptr);
  const auto vectors = ReadVocabVectors(inp.substr(0, inp.size() - 4));
  ASSERT_GT(vectors.size(), 30u);
  const RawVocab raw = ReadRaw(path);
  for (const auto& v : vectors) {
    auto ids = tok->Encode(v.text, {});
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, v.ids) << "text: \"" << v.text << "\"";
    EXPECT_EQ(tok->Decode(*ids), v.text);
    // run.c agrees (it always adds BOS).
    auto with_bos = tok->Encode(v.text, {.add_bos = true});
    ASSERT_TRUE(with_bos.ok());
    EXPECT_EQ(*with_bos, RunCEncode(raw, v.text, true)) << "text: \"" << v.text << "\"";
  }
}

// Parses `key` lines of the stories260K golden file.
std::string GoldenField(const std::string& golden, const std::string& key) {
  const size_t at = golden.find("\n" + key);
  if (at == std::string::npos) return "";
  const size_t colon = golden.find(':', at + 1 + key.size());
  const size_t eol = golden.find('\n', colon);
  return golden.substr(colon + 1, eol - colon - 1);
}

TEST(Llama2cTokenizerTest, Stories260KPromptAndRunCOutput) {
  LLMSERVE_REQUIRE_ASSET(path, "models/llama2c/tok512.bin");
  LLMSERVE_REQUIRE_ASSET(golden_path, "golden/stories260K_greedy.txt");
  auto tok = LoadOrDie(path);
  ASSERT_NE(tok, nullptr);
  const std::string golden = ReadAll(golden_path);
  std::string prompt = GoldenField(golden, "prompt");
  ASSERT_GE(prompt.size(), 3u);
  prompt = prompt.substr(prompt.find('"') + 1);
  prompt = prompt.substr(0, prompt.rfind('"'));
  ASSERT_EQ(prompt, "Once upon a time");
  const std::vector<int32_t> prompt_ids = ParseIds(GoldenField(golden, "prompt_ids"));
  const std::vector<int32_t> seq = ParseIds(GoldenField(golden, "sequence_ids"));
  ASSERT_EQ(prompt_ids.size(), 5u);
  ASSERT_EQ(seq.size(), 257u);

  auto ids = tok->Encode(prompt, {.add_bos = true});
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, prompt_ids);
  EXPECT_EQ(*ids, RunCEncode(ReadRaw(path), prompt, true));

  // run.c prints every sampled token (leading space stripped after BOS), then "\n".
  const std::string begin = "--- BEGIN stdout\n";
  const size_t b = golden.find(begin);
  const size_t e = golden.find("--- END stdout");
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  const std::string stdout_text = golden.substr(b + begin.size(), e - b - begin.size());
  ASSERT_EQ(seq[0], 1);
  const std::vector<int32_t> generated(seq.begin() + 1, seq.end());
  EXPECT_EQ(tok->Decode(generated) + "\n", stdout_text);
}

TEST(Llama2cTokenizerTest, AidreamsTokenizerRoundTrips) {
  LLMSERVE_REQUIRE_ASSET(path, "models/llama2c/aidreams260K_tok512.bin");
  auto tok = LoadOrDie(path);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocab_size(), 512);
  const RawVocab raw = ReadRaw(path);
  for (const std::string text : {"I dreamed I was flying over a silent city.", "  two spaces\nand a newline",
                                 "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x99\x82!", "", " "}) {
    auto ids = tok->Encode(text, {.add_bos = true});
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(tok->Decode(*ids), text);
    EXPECT_EQ(*ids, RunCEncode(raw, text, true)) << text;
  }
  // The vocabulary's merges apply: an English sentence takes clearly fewer tokens than characters.
  const std::string sentence = "I dreamed I was flying over a silent city.";
  auto ids = tok->Encode(sentence, {});
  ASSERT_TRUE(ids.ok());
  EXPECT_LT(ids->size(), sentence.size() * 3 / 4);
}

// Random text: our O(n log n) tokenizer equals the transcription of run.c on every vocabulary.
TEST(Llama2cTokenizerTest, MatchesRunCEncodeOnRandomText) {
  LLMSERVE_REQUIRE_ASSET(big, "models/llama2c/tokenizer.bin");
  LLMSERVE_REQUIRE_ASSET(small, "models/llama2c/tok512.bin");
  LLMSERVE_REQUIRE_ASSET(dreams, "models/llama2c/aidreams260K_tok512.bin");
  const std::vector<std::string> pool = {"a", "e", "t", "h", "o", "n", "s", "r", " ", " ", " ", "  ", "\n", "\t",
                                         "T", "Once", " upon", "the", "ing", ",", ".", "'", "0", "7", "42",
                                         "\xC3\xA9", "\xE6\x97\xA5", "\xF0\x9F\x99\x82", "\xE2\x80\x94", "\xC3\xBC"};
  std::mt19937 rng(1234);
  for (const std::string& path : {big, small, dreams}) {
    auto tok = LoadOrDie(path);
    ASSERT_NE(tok, nullptr);
    const RawVocab raw = ReadRaw(path);
    for (int trial = 0; trial < 150; ++trial) {
      std::string text;
      const int n = static_cast<int>(rng() % 60);
      for (int i = 0; i < n; ++i) text += pool[rng() % pool.size()];
      auto ids = tok->Encode(text, {.add_bos = true});
      ASSERT_TRUE(ids.ok()) << ids.status();
      ASSERT_EQ(*ids, RunCEncode(raw, text, true)) << path << " text: \"" << text << "\"";
      ASSERT_EQ(tok->Decode(*ids), text);
    }
  }
}

// ---- corrupted files ----------------------------------------------------------------

// Offsets just after each record of a well-formed tokenizer.bin (ends[k]: after k tokens).
std::vector<size_t> RecordEnds(const std::string& b) {
  std::vector<size_t> ends = {4};
  size_t off = 4;
  while (off + 8 <= b.size()) {
    int32_t len;
    std::memcpy(&len, b.data() + off + 4, 4);
    off += 8 + static_cast<size_t>(len);
    ends.push_back(off);
  }
  return ends;
}

std::string Int32Bytes(int32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
std::string FloatBytes(float v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

// A tokenizer.bin with the given header and (score, declared length, bytes) records.
struct Rec {
  float score;
  int32_t len;
  std::string bytes;
};
std::string MakeBin(int32_t max_len, const std::vector<Rec>& recs) {
  std::string b = Int32Bytes(max_len);
  for (const Rec& r : recs) b += FloatBytes(r.score) + Int32Bytes(r.len) + r.bytes;
  return b;
}
std::vector<Rec> BaseRecs() {
  return {{0, 5, "<unk>"}, {0, 5, "\n<s>\n"}, {0, 6, "\n</s>\n"}, {0, 6, "<0x41>"}, {-1, 2, " a"}, {-2, 1, "a"}};
}

absl::Status ParseBytes(const std::string& bytes, const std::string& name) {
  // An exact-size heap copy, so that ASan reports any read past the end.
  std::vector<uint8_t> buf(bytes.begin(), bytes.end());
  return TokenizerSpecFromLlama2cBytes(buf, name).status();
}

TEST(Llama2cTokenizerTest, SyntheticFileConverts) {
  const std::string bin = MakeBin(8, BaseRecs());
  auto spec = TokenizerSpecFromLlama2cBytes(std::vector<uint8_t>(bin.begin(), bin.end()), "syn.bin");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->tokens, (std::vector<std::string>{"<unk>", "<s>", "</s>", "<0x41>", "\xE2\x96\x81" "a", "a"}));
  EXPECT_EQ(spec->types[3], TokenType::kByte);
  EXPECT_EQ(spec->types[4], TokenType::kNormal);
  EXPECT_EQ(spec->scores[5], -2.0f);
}

TEST(Llama2cTokenizerTest, EveryTruncationIsRejectedUnlessAtARecordBoundary) {
  LLMSERVE_REQUIRE_ASSET(path, "models/llama2c/tok512.bin");
  const std::string full = ReadAll(path);
  const std::vector<size_t> ends = RecordEnds(full);
  ASSERT_EQ(ends.back(), full.size());
  for (size_t len = 0; len < full.size(); ++len) {
    std::vector<uint8_t> buf(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
    auto spec = TokenizerSpecFromLlama2cBytes(buf, "cut.bin");
    const auto it = std::find(ends.begin(), ends.end(), len);
    const size_t k = static_cast<size_t>(it - ends.begin());
    if (it != ends.end() && k >= 3) {
      // Cut between records: a shorter but well-formed vocabulary (the count is not stored).
      ASSERT_TRUE(spec.ok()) << "cut at " << len << ": " << spec.status();
      ASSERT_EQ(spec->tokens.size(), k);
    } else {
      ASSERT_FALSE(spec.ok()) << "cut at " << len;
      ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
      ASSERT_EQ(std::string(spec.status().message()).rfind("cut.bin: ", 0), 0u) << spec.status();
    }
  }
  // Through real files too: the message names the path and says what is wrong.
  const std::string dir = testing::ScratchDir("llama2c_tok");
  for (size_t len : {size_t{0}, size_t{2}, size_t{6}, size_t{11}, full.size() - 1}) {
    const std::string file = dir + "/cut_" + std::to_string(len) + ".bin";
    WriteAll(file, full.substr(0, len));
    auto spec = TokenizerSpecFromLlama2cBin(file);
    ASSERT_FALSE(spec.ok());
    EXPECT_NE(std::string(spec.status().message()).find(file), std::string::npos) << spec.status();
    EXPECT_NE(std::string(spec.status().message()).find("truncated"), std::string::npos) << spec.status();
  }
}

// Given the model's vocabulary size, as run.c reads it, a file cut at a record boundary
// (a well-formed but shorter vocabulary) and one with records beyond it are refused.
TEST(Llama2cTokenizerTest, ModelVocabSizeMustMatchTheFile) {
  LLMSERVE_REQUIRE_ASSET(path, "models/llama2c/tok512.bin");
  const std::string full = ReadAll(path);
  const std::vector<size_t> ends = RecordEnds(full);
  ASSERT_EQ(ends.size(), 513u);  // ends[k]: the end of the first k records
  auto whole = TokenizerSpecFromLlama2cBytes(std::vector<uint8_t>(full.begin(), full.end()), "tok.bin", 512);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->tokens.size(), 512u);
  for (size_t k : {size_t{3}, size_t{7}, size_t{511}}) {
    const std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(ends[k]));
    ASSERT_TRUE(TokenizerSpecFromLlama2cBytes(cut, "cut.bin").ok()) << k;  // alone it looks whole
    auto spec = TokenizerSpecFromLlama2cBytes(cut, "cut.bin", 512);
    ASSERT_FALSE(spec.ok()) << k;
    EXPECT_EQ(spec.status().message(),
              absl::StrCat("cut.bin: holds ", k, " tokens, the model has 512: the file is truncated or belongs to "
                           "another model"));
  }
  auto fewer = TokenizerSpecFromLlama2cBytes(std::vector<uint8_t>(full.begin(), full.end()), "tok.bin", 300);
  ASSERT_FALSE(fewer.ok());
  EXPECT_NE(std::string(fewer.status().message()).find("holds more than the model's 300 tokens"), std::string::npos)
      << fewer.status();
}

TEST(Llama2cTokenizerTest, BadFieldsAreRejected) {
  auto expect_error = [](const std::string& bytes, const std::string& needle) {
    const absl::Status s = ParseBytes(bytes, "bad.bin");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << needle;
    EXPECT_NE(std::string(s.message()).find("bad.bin: "), std::string::npos) << s;
    EXPECT_NE(std::string(s.message()).find(needle), std::string::npos) << s;
  };
  ASSERT_TRUE(ParseBytes(MakeBin(8, BaseRecs()), "ok.bin").ok());
  auto recs = BaseRecs();
  recs[4] = {0, -5, ""};
  expect_error(MakeBin(8, recs), "negative length -5");
  recs[4] = {0, INT32_MAX, "xyz"};
  expect_error(MakeBin(8, recs), "exceeds max_token_length");
  expect_error(MakeBin(INT32_MAX, recs), "truncated");
  recs[4] = {0, 7, "toolong"};
  expect_error(MakeBin(6, recs), "exceeds max_token_length 6");
  recs = BaseRecs();
  recs[5].score = std::numeric_limits<float>::quiet_NaN();
  expect_error(MakeBin(8, recs), "NaN");
  expect_error(MakeBin(0, BaseRecs()), "max_token_length is 0");
  expect_error(MakeBin(-3, BaseRecs()), "max_token_length is -3");
  expect_error(MakeBin(8, {{0, 5, "<unk>"}, {0, 5, "\n<s>\n"}}), "only 2 tokens");
  expect_error("", "truncated");
  expect_error(MakeBin(8, BaseRecs()) + "\x01\x02\x03", "truncated");

  auto missing = TokenizerSpecFromLlama2cBin("/nonexistent/dir/tokenizer.bin");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  auto dir = TokenizerSpecFromLlama2cBin(testing::ScratchDir("llama2c_dir"));
  EXPECT_FALSE(dir.ok());
}

}  // namespace
}  // namespace llmserve
