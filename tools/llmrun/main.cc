// llmrun: offline greedy generation through the batched forward pass (no server).
//
//   llmrun --model PATH [--tokenizer PATH] (--prompt TEXT ... | --prompts-file FILE)
//          [--max-tokens N] [--top-logits K] [--batch] [--prefill-chunk N]
//          [--block-size N] [--weight-dtype f32|bf16] [--kv-dtype f32|bf16] [--threads N]
//
// PATH is a llama2.c .bin (its tokenizer then given by --tokenizer), a .gguf, or a
// HuggingFace directory. A prompts file holds one JSON string per line. Prints one JSON
// line per prompt, in input order:
//   {"prompt_ids": [...], "generated_ids": [...], "text": "...", "top_logits": [[id, logit], ...]}
// Generation stops at --max-tokens, at the model's EOS (not kept in generated_ids), or
// when the context is full; for llama2.c models BOS (id 1) also ends a story, as in run.c.
// Flags take "--name value" or "--name=value"; dashes and underscores are interchangeable.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "model/greedy_runner.h"
#include "model/model_loader.h"
#include "model/tokenizer/tokenizer_loader.h"
#include "nlohmann/json.hpp"

namespace {

using llmserve::DType;

constexpr const char* kUsage =
    "usage: llmrun --model PATH [--tokenizer PATH] (--prompt TEXT ... | --prompts-file FILE)\n"
    "              [--max-tokens N (256)] [--top-logits K] [--batch] [--prefill-chunk N (0 = whole prompt)]\n"
    "              [--block-size N (16)] [--weight-dtype f32|bf16] [--kv-dtype f32|bf16 (f32)] [--threads N (0 = all)]\n";

struct Args {
  std::string model, tokenizer, prompts_file;
  std::vector<std::string> prompts;
  int64_t max_tokens = 256, prefill_chunk = 0, block_size = 16;
  int top_logits = 0, threads = 0;
  bool batch = false;
  DType weight_dtype = llmserve::DefaultWeightDType();
  DType kv_dtype = DType::kF32;
};

absl::Status ParseDType(const std::string& flag, const std::string& v, DType* out) {
  if (v == "f32") {
    *out = DType::kF32;
  } else if (v == "bf16") {
    *out = DType::kBF16;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": '", v, "' is not f32 or bf16"));
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status ParseInt(const std::string& flag, const std::string& v, T lo, T hi, T* out) {
  int64_t x = 0;
  if (!absl::SimpleAtoi(v, &x) || x < lo || x > hi) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": '", v, "' is not an integer in [", lo, ", ", hi, "]"));
  }
  *out = static_cast<T>(x);
  return absl::OkStatus();
}

// Parses argv into *a; sets *help (and stops) on -h/--help.
absl::Status ParseArgs(int argc, char** argv, Args* a, bool* help) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      *help = true;
      return absl::OkStatus();
    }
    if (arg.rfind("--", 0) != 0) return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg, "'"));
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    for (char& ch : name) ch = ch == '_' ? '-' : ch;
    if (name == "batch") {
      if (has_value && value != "true" && value != "1") {
        if (value != "false" && value != "0") return absl::InvalidArgumentError("--batch takes no value");
        a->batch = false;
      } else {
        a->batch = true;
      }
      continue;
    }
    static const char* kValued[] = {"model", "tokenizer", "prompt", "prompts-file", "max-tokens", "top-logits",
                                    "prefill-chunk", "block-size", "weight-dtype", "kv-dtype", "threads"};
    if (std::find(std::begin(kValued), std::end(kValued), name) == std::end(kValued)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
    if (!has_value) {
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      value = argv[++i];
    }
    absl::Status s;
    if (name == "model") a->model = value;
    else if (name == "tokenizer") a->tokenizer = value;
    else if (name == "prompt") a->prompts.push_back(value);
    else if (name == "prompts-file") a->prompts_file = value;
    else if (name == "max-tokens") s = ParseInt<int64_t>(name, value, 0, int64_t{1} << 24, &a->max_tokens);
    else if (name == "top-logits") s = ParseInt<int>(name, value, 0, 1 << 24, &a->top_logits);
    else if (name == "prefill-chunk") s = ParseInt<int64_t>(name, value, 0, int64_t{1} << 24, &a->prefill_chunk);
    else if (name == "block-size") s = ParseInt<int64_t>(name, value, 1, 4096, &a->block_size);
    else if (name == "threads") s = ParseInt<int>(name, value, 0, 4096, &a->threads);
    else if (name == "weight-dtype") s = ParseDType(name, value, &a->weight_dtype);
    else if (name == "kv-dtype") s = ParseDType(name, value, &a->kv_dtype);
    if (!s.ok()) return s;
  }
  if (a->model.empty()) return absl::InvalidArgumentError("--model is required");
  if (a->prompts.empty() == a->prompts_file.empty()) {
    return absl::InvalidArgumentError("give --prompt TEXT (repeatable) or --prompts-file FILE (not both)");
  }
  return absl::OkStatus();
}

// One JSON string per non-empty line.
absl::StatusOr<std::vector<std::string>> ReadPromptsFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open prompts file"));
  std::vector<std::string> prompts;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", n, ": expected one JSON string per line"));
    }
    prompts.push_back(j.get<std::string>());
  }
  return prompts;
}

// The continuation's text: Decode(prompt + generated) minus Decode(prompt) when the
// latter is a prefix (keeps a leading space SentencePiece would drop from the
// continuation alone), else Decode(generated).
std::string ContinuationText(const llmserve::Tokenizer& tok, const std::vector<int32_t>& prompt,
                             const std::vector<int32_t>& generated) {
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), generated.begin(), generated.end());
  const std::string full = tok.Decode(all), head = tok.Decode(prompt);
  if (full.compare(0, head.size(), head) == 0) return full.substr(head.size());
  return tok.Decode(generated);
}

int Fail(const absl::Status& status) {
  std::cerr << "llmrun: " << status.ToString() << "\n";
  return 1;
}

int Run(const Args& args) {
  auto format = llmserve::DetectModelFormat(args.model);
  if (!format.ok()) return Fail(format.status());
  const bool llama2c = *format == llmserve::ModelFormat::kLlama2c;
  std::string tok_path = args.tokenizer;
  if (tok_path.empty()) {
    if (llama2c) return Fail(absl::InvalidArgumentError("llama2.c checkpoints need --tokenizer"));
    tok_path = args.model;
  }
  auto tok = llmserve::LoadTokenizer(tok_path);
  if (!tok.ok()) return Fail(tok.status());
  auto weights = llmserve::LoadModel(args.model);
  if (!weights.ok()) return Fail(weights.status());
  const llmserve::ModelConfig& config = (*weights)->config;
  if ((*tok)->vocab_size() > config.vocab_size) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("tokenizer ", tok_path, " has ", (*tok)->vocab_size(),
                                                        " tokens, more than the model's ", config.vocab_size)));
  }

  std::vector<std::string> texts = args.prompts;
  if (!args.prompts_file.empty()) {
    auto read = ReadPromptsFile(args.prompts_file);
    if (!read.ok()) return Fail(read.status());
    texts = *std::move(read);
  }
  llmserve::EncodeOptions enc;
  enc.add_bos = llama2c || (*tok)->add_bos_default();
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < texts.size(); ++i) {
    auto ids = (*tok)->Encode(texts[i], enc);
    if (!ids.ok()) return Fail(absl::InvalidArgumentError(absl::StrCat("prompt ", i + 1, ": ", ids.status().message())));
    prompts.push_back(*std::move(ids));
  }

  llmserve::RuntimeConfig runtime;
  runtime.weight_dtype = args.weight_dtype;
  runtime.kv_dtype = args.kv_dtype;
  runtime.threads = args.threads;
  auto model = llmserve::Transformer::Create(**weights, runtime);
  if (!model.ok()) return Fail(model.status());

  llmserve::GreedyOptions opt;
  opt.max_tokens = args.max_tokens;
  opt.prefill_chunk = args.prefill_chunk;
  opt.block_size = args.block_size;
  opt.kv_dtype = args.kv_dtype;
  opt.top_logits = args.top_logits;
  opt.batch = args.batch;
  for (int32_t id : {config.eos_id, (*tok)->eos_id(), llama2c ? int32_t{1} : int32_t{-1}}) {
    if (id >= 0) opt.stop_ids.push_back(id);
  }
  auto results = llmserve::RunGreedy(**model, prompts, opt);
  if (!results.ok()) return Fail(results.status());

  std::string out;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const llmserve::GreedyResult& r = (*results)[i];
    nlohmann::ordered_json j;  // keys in the documented order
    j["prompt_ids"] = prompts[i];
    j["generated_ids"] = r.generated;
    j["text"] = ContinuationText(**tok, prompts[i], r.generated);
    if (args.top_logits > 0) {
      nlohmann::ordered_json top = nlohmann::ordered_json::array();
      for (const auto& [id, logit] : r.top_logits) top.push_back({id, logit});
      j["top_logits"] = std::move(top);
    }
    out += j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    out += '\n';
  }
  std::cout << out << std::flush;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  bool help = false;
  if (absl::Status s = ParseArgs(argc, argv, &args, &help); !s.ok()) {
    std::cerr << "llmrun: " << s.message() << "\n" << kUsage;
    return 1;
  }
  if (help) {
    std::cout << kUsage;
    return 0;
  }
  return Run(args);
}
