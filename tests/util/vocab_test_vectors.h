// llama.cpp's tokenizer test vectors (models/ggml-vocab-*.gguf.inp / .out):
//   .inp: the test strings, each followed by "\n__ggml_vocab_test__\n" (so the file ends
//         with the separator);
//   .out: one line per string, its token ids separated by spaces (each id preceded by a
//         space, as llama.cpp writes them; an empty line for an empty encoding).
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace llmserve::testing {

inline constexpr char kVocabTestSeparator[] = "\n__ggml_vocab_test__\n";

// Splits .inp content into its strings. Text after the last separator (normally none) is
// returned as a final string only if it is non-empty.
inline std::vector<std::string> ParseVocabTestInp(const std::string& content) {
  const std::string sep = kVocabTestSeparator;
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t pos = content.find(sep, start);
    if (pos == std::string::npos) break;
    out.push_back(content.substr(start, pos - start));
    start = pos + sep.size();
  }
  if (start < content.size()) out.push_back(content.substr(start));
  return out;
}

// Parses .out content: one vector of ids per line. Returns false (and sets *error) on a
// token that is not a decimal integer.
inline bool ParseVocabTestOut(const std::string& content, std::vector<std::vector<int32_t>>* out,
                              std::string* error) {
  out->clear();
  std::istringstream lines(content);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<int32_t> ids;
    std::istringstream fields(line);
    std::string field;
    while (fields >> field) {
      if (field.find_first_not_of("0123456789") != std::string::npos || field.size() > 9) {
        *error = "bad id \"" + field + "\" in line " + std::to_string(out->size() + 1);
        return false;
      }
      ids.push_back(static_cast<int32_t>(std::stol(field)));
    }
    out->push_back(std::move(ids));
  }
  return true;
}

// Reads a whole file ("" if it cannot be read; check with the asset macros first).
inline std::string ReadTestFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One test case: the string and its expected ids.
struct VocabTestCase {
  std::string text;
  std::vector<int32_t> ids;
};

// Reads `<base>.inp` and `<base>.out` into cases. Returns false (with *error) if a file is
// unreadable, malformed, or the two disagree on the number of strings.
inline bool LoadVocabTestVectors(const std::string& base, std::vector<VocabTestCase>* cases, std::string* error) {
  const std::string inp = ReadTestFile(base + ".inp");
  const std::string outc = ReadTestFile(base + ".out");
  if (inp.empty() || outc.empty()) {
    *error = "cannot read " + base + ".inp/.out";
    return false;
  }
  const std::vector<std::string> texts = ParseVocabTestInp(inp);
  std::vector<std::vector<int32_t>> ids;
  if (!ParseVocabTestOut(outc, &ids, error)) return false;
  if (texts.size() != ids.size()) {
    *error = base + ": " + std::to_string(texts.size()) + " strings but " + std::to_string(ids.size()) + " id lines";
    return false;
  }
  cases->clear();
  for (size_t i = 0; i < texts.size(); ++i) cases->push_back({texts[i], ids[i]});
  return true;
}

}  // namespace llmserve::testing
