// llminfo: loads a model (and optionally its tokenizer) and prints what llmserve sees:
// the ModelConfig, every tensor with dtype and shape, and a sample encoding.
//
//   llminfo --model PATH [--tokenizer PATH] [--prompt TEXT] [--tensors]
//
// Exits non-zero with a clear message when a file is malformed.
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "model/model_loader.h"
#include "model/tokenizer/tokenizer_loader.h"

ABSL_FLAG(std::string, model, "", "model: llama2.c .bin, .gguf, or HuggingFace directory");
ABSL_FLAG(std::string, tokenizer, "", "tokenizer (default: the model's own: GGUF metadata or files in the HF directory)");
ABSL_FLAG(std::string, prompt, "Once upon a time", "text to encode with the tokenizer");
ABSL_FLAG(bool, tensors, false, "list every tensor");

namespace {
int Fail(const absl::Status& status) {
  std::cerr << "llminfo: " << status.ToString() << "\n";
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("llminfo --model PATH [--tokenizer PATH] [--prompt TEXT] [--tensors]");
  absl::ParseCommandLine(argc, argv);
  const std::string model_path = absl::GetFlag(FLAGS_model);
  if (model_path.empty()) return Fail(absl::InvalidArgumentError("--model is required"));

  auto weights = llmserve::LoadModel(model_path);
  if (!weights.ok()) return Fail(weights.status());
  const llmserve::ModelConfig& config = (*weights)->config;
  std::cout << config.DebugString();

  size_t total_bytes = 0;
  for (const auto& [name, t] : (*weights)->tensors()) total_bytes += t.nbytes;
  absl::PrintF("tensors: %d (%.2f MiB)\n", (*weights)->tensors().size(), total_bytes / 1048576.0);
  if (absl::GetFlag(FLAGS_tensors)) {
    for (const auto& [name, t] : (*weights)->tensors()) {
      absl::PrintF("  %-32s %-5s %s\n", name, llmserve::DTypeName(t.dtype), llmserve::ShapeString(t.shape));
    }
  }

  std::string tok_path = absl::GetFlag(FLAGS_tokenizer);
  if (tok_path.empty()) {
    auto format = llmserve::DetectModelFormat(model_path);
    if (format.ok() && *format != llmserve::ModelFormat::kLlama2c) tok_path = model_path;
  }
  if (tok_path.empty()) {
    std::cout << "tokenizer: none (llama2.c checkpoints need --tokenizer)\n";
    return 0;
  }
  auto tok = llmserve::LoadTokenizer(tok_path);
  if (!tok.ok()) return Fail(tok.status());
  absl::PrintF("tokenizer: %s, %d tokens, bos %d, eos %d\n",
               (*tok)->spec().kind == llmserve::TokenizerKind::kSentencePiece ? "sentencepiece-bpe" : "byte-level-bpe",
               (*tok)->vocab_size(), (*tok)->bos_id(), (*tok)->eos_id());
  if ((*tok)->vocab_size() != config.vocab_size) {
    absl::PrintF("warning: tokenizer has %d tokens but the model's vocabulary is %d\n", (*tok)->vocab_size(),
                 config.vocab_size);
  }
  const std::string prompt = absl::GetFlag(FLAGS_prompt);
  auto ids = (*tok)->Encode(prompt, {.add_bos = true, .parse_special = false});
  if (!ids.ok()) return Fail(ids.status());
  std::cout << "prompt: \"" << prompt << "\" ->";
  for (int32_t id : *ids) std::cout << ' ' << id;
  std::cout << "\n";
  return 0;
}
