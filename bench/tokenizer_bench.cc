// Tokenizer encode throughput on ~1 MiB of English text, with the GPT-2 (byte-level
// BPE) and Llama 2 (SentencePiece BPE) tokenizers from the shared assets.
//
//   tokenizer_bench [--corpus=FILE] [google-benchmark flags]
//
// The default corpus is built from English text every Debian system has: the license
// texts in /usr/share/common-licenses, then /usr/share/doc/*/copyright files in sorted
// order, cut at 1 MiB. Reports bytes/s ("bytes_per_second") per tokenizer.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "model/tokenizer/tokenizer_loader.h"
#include "model/tokenizer/utf8.h"

namespace {

namespace fs = std::filesystem;
constexpr size_t kCorpusBytes = 1 << 20;
std::string g_corpus_path;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string BuildCorpus() {
  if (!g_corpus_path.empty()) return ReadAll(g_corpus_path);
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/share/common-licenses", ec)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<fs::path> copyrights;
  for (const auto& e : fs::directory_iterator("/usr/share/doc", ec)) {
    fs::path c = e.path() / "copyright";
    if (fs::is_regular_file(c, ec)) copyrights.push_back(c);
  }
  std::sort(copyrights.begin(), copyrights.end());
  files.insert(files.end(), copyrights.begin(), copyrights.end());
  std::string corpus;
  for (const auto& f : files) {
    if (!fs::is_regular_file(f, ec)) continue;
    std::string text = ReadAll(f);
    if (!llmserve::utf8::IsValid(text)) continue;
    corpus += text;
    if (corpus.size() >= kCorpusBytes) break;
  }
  corpus.resize(std::min(corpus.size(), kCorpusBytes));
  // Do not end inside a character.
  corpus.resize(llmserve::utf8::CompletePrefixLength(corpus));
  return corpus;
}

const std::string& Corpus() {
  static const std::string corpus = BuildCorpus();
  return corpus;
}

std::string AssetsRoot() {
  const char* env = std::getenv("LLMSERVE_TEST_ASSETS");
  return env != nullptr && *env != '\0' ? env : "../shared";
}

void EncodeCorpus(benchmark::State& state, const std::string& relative_path) {
  const std::string path = AssetsRoot() + "/" + relative_path;
  auto tok = llmserve::LoadTokenizer(path);
  if (!tok.ok()) {
    state.SkipWithError(std::string(tok.status().message()).c_str());
    return;
  }
  const std::string& text = Corpus();
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = (*tok)->Encode(text, {});
    if (!ids.ok()) {
      state.SkipWithError(std::string(ids.status().message()).c_str());
      return;
    }
    tokens = ids->size();
    benchmark::DoNotOptimize(ids->data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["corpus_bytes"] = static_cast<double>(text.size());
  state.counters["tokens"] = static_cast<double>(tokens);
}

BENCHMARK_CAPTURE(EncodeCorpus, gpt2_vocab_merges, std::string("models/tokenizers/bpe/gpt2/vocab.json"))
    ->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(EncodeCorpus, gpt2_gguf, std::string("models/tokenizers/gguf/ggml-vocab-gpt-2.gguf"))
    ->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(EncodeCorpus, llama2_hf_json, std::string("models/tokenizers/hf/llama2/tokenizer.json"))
    ->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(EncodeCorpus, llama2_gguf, std::string("models/tokenizers/gguf/ggml-vocab-llama-spm.gguf"))
    ->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(EncodeCorpus, llama3_encoder_json, std::string("models/tokenizers/bpe/llama3/encoder.json"))
    ->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

int main(int argc, char** argv) {
  // Our own flag first; the rest go to Google Benchmark.
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--corpus=", 0) == 0) {
      g_corpus_path = arg.substr(9);
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  std::cerr << "corpus: " << Corpus().size() << " bytes\n";
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
