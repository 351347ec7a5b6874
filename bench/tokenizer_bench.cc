// Tokenizer encode throughput on ~1 MiB of English text, with the GPT-2 (byte-level
// BPE) and Llama 2 (SentencePiece BPE) tokenizers from the shared assets.
//
//   tokenizer_bench [--corpus=FILE] [google-benchmark flags]
//
// The default corpus is 1 MiB of English text every Debian system has
// (tests/util/english_corpus.h: license texts, then the packages' copyright files).
// Reports bytes/s ("bytes_per_second") per tokenizer.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "model/tokenizer/tokenizer_loader.h"
#include "tests/util/english_corpus.h"

namespace {

std::string g_corpus_path;

const std::string& Corpus() {
  static const std::string corpus =
      g_corpus_path.empty() ? llmserve::testing::EnglishCorpus() : llmserve::testing::ReadWholeFile(g_corpus_path);
  return corpus;
}

// LLMSERVE_TEST_ASSETS, relative to the source tree when relative (default ../shared).
std::string AssetsRoot() {
  const char* env = std::getenv("LLMSERVE_TEST_ASSETS");
  const std::string root = env != nullptr && *env != '\0' ? env : "../shared";
  return root[0] == '/' ? root : std::string(LLMSERVE_SOURCE_DIR) + "/" + root;
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
