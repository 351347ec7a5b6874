// llmtok: encodes or decodes strings with any tokenizer llmserve can load.
//
//   llmtok --tokenizer PATH [--pretokenizer NAME] --inp FILE            encode
//   llmtok --tokenizer PATH --decode --inp FILE                          decode
//   llmtok --tokenizer PATH --text "Hello world" [--add-bos]             encode one string
//
// Encoding reads llama.cpp's .inp format (strings separated by "\n__ggml_vocab_test__\n",
// the file ending with the separator) and prints one line per string in the .out
// format (" id id id", each id preceded by a space). Decoding reads such id lines and
// prints each decoded string followed by the separator, i.e. the .inp format again.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "model/tokenizer/tokenizer_loader.h"

ABSL_FLAG(std::string, tokenizer, "", "tokenizer: .gguf, tokenizer.json, directory, tokenizer.bin, or vocab file with merges beside it");
ABSL_FLAG(std::string, pretokenizer, "", "pre-tokenizer for vocab+merges files: gpt2, llama3, qwen2 (default: guess)");
ABSL_FLAG(std::string, inp, "", "input file (.inp format to encode; id lines to decode)");
ABSL_FLAG(std::string, text, "", "encode this one string instead of --inp");
ABSL_FLAG(bool, decode, false, "decode id lines from --inp into the .inp format");
ABSL_FLAG(bool, add_bos, false, "prepend BOS when encoding");
ABSL_FLAG(bool, parse_special, false, "recognise special tokens written in the text");
ABSL_FLAG(bool, keep_special, false, "when decoding, render special tokens instead of skipping them");

namespace {

constexpr std::string_view kSeparator = "\n__ggml_vocab_test__\n";

int Fail(const std::string& message) {
  std::cerr << "llmtok: " << message << "\n";
  return 1;
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

// Splits the .inp format; the text after the final separator (normally empty) is kept
// only if non-empty.
std::vector<std::string> SplitInp(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t pos = text.find(kSeparator, start);
    if (pos == std::string::npos) break;
    out.push_back(text.substr(start, pos - start));
    start = pos + kSeparator.size();
  }
  if (start < text.size()) out.push_back(text.substr(start));
  return out;
}

int Encode(const llmserve::Tokenizer& tok, const std::vector<std::string>& inputs) {
  llmserve::EncodeOptions opts;
  opts.add_bos = absl::GetFlag(FLAGS_add_bos);
  opts.parse_special = absl::GetFlag(FLAGS_parse_special);
  std::string out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto ids = tok.Encode(inputs[i], opts);
    if (!ids.ok()) return Fail("string " + std::to_string(i + 1) + ": " + std::string(ids.status().message()));
    for (int32_t id : *ids) {
      out += ' ';
      out += std::to_string(id);
    }
    out += '\n';
  }
  std::cout << out;
  return 0;
}

int Decode(const llmserve::Tokenizer& tok, const std::string& text) {
  llmserve::DecodeOptions opts;
  opts.skip_special = !absl::GetFlag(FLAGS_keep_special);
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();  // final newline
  std::string out;
  for (size_t n = 0; n < lines.size(); ++n) {
    std::vector<int32_t> ids;
    for (absl::string_view field : absl::StrSplit(lines[n], ' ', absl::SkipEmpty())) {
      int32_t id;
      if (!absl::SimpleAtoi(field, &id) || id < 0 || id >= tok.vocab_size()) {
        return Fail("line " + std::to_string(n + 1) + ": '" + std::string(field) + "' is not a token id");
      }
      ids.push_back(id);
    }
    out += tok.Decode(ids, opts);
    out += kSeparator;
  }
  std::cout << out;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "llmtok --tokenizer PATH [--pretokenizer NAME] (--inp FILE | --text STR) [--decode] [--add_bos] "
      "[--parse_special]");
  absl::ParseCommandLine(argc, argv);
  const std::string path = absl::GetFlag(FLAGS_tokenizer);
  if (path.empty()) return Fail("--tokenizer is required");

  llmserve::TokenizerLoadOptions load_opts;
  load_opts.pretokenizer = absl::GetFlag(FLAGS_pretokenizer);
  auto tok = llmserve::LoadTokenizer(path, load_opts);
  if (!tok.ok()) return Fail(std::string(tok.status().ToString()));

  const std::string inp = absl::GetFlag(FLAGS_inp);
  if (absl::GetFlag(FLAGS_decode)) {
    if (inp.empty()) return Fail("--decode needs --inp FILE of id lines");
    std::string text;
    if (!ReadFile(inp, &text)) return Fail("cannot read " + inp);
    return Decode(**tok, text);
  }
  if (!absl::GetFlag(FLAGS_text).empty()) return Encode(**tok, {absl::GetFlag(FLAGS_text)});
  if (inp.empty()) return Fail("give --inp FILE or --text STRING");
  std::string text;
  if (!ReadFile(inp, &text)) return Fail("cannot read " + inp);
  return Encode(**tok, SplitInp(text));
}
