// ~1 MiB of real English text that every Debian system has, for tokenizer tests and
// benchmarks: the license texts in /usr/share/common-licenses, then the packages'
// /usr/share/doc/*/copyright files in sorted order (valid UTF-8 files only), repeated
// if the system has less, and cut at a character boundary.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model/tokenizer/utf8.h"

namespace llmserve::testing {

inline std::string ReadWholeFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// `bytes` of English text (at most; cut back to a character boundary).
inline std::string EnglishCorpus(size_t bytes = size_t{1} << 20) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/share/common-licenses", ec)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<fs::path> copyrights;
  for (const auto& e : fs::directory_iterator("/usr/share/doc", ec)) {
    const fs::path c = e.path() / "copyright";
    if (fs::is_regular_file(c, ec)) copyrights.push_back(c);
  }
  std::sort(copyrights.begin(), copyrights.end());
  files.insert(files.end(), copyrights.begin(), copyrights.end());
  std::string corpus;
  for (const auto& f : files) {
    if (corpus.size() >= bytes) break;
    if (!fs::is_regular_file(f, ec)) continue;
    std::string text = ReadWholeFile(f);
    if (utf8::IsValid(text)) corpus += text;
  }
  if (corpus.empty()) corpus = "Once upon a time, there was a little girl named Lily. She loved to play outside.\n";
  const std::string unit = corpus;
  while (corpus.size() < bytes) corpus += unit;
  corpus.resize(bytes);
  corpus.resize(utf8::CompletePrefixLength(corpus));
  return corpus;
}

}  // namespace llmserve::testing
