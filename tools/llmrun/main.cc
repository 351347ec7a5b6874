// llmrun: offline generation (no server) through the continuous-batching engine.
//
//   llmrun --model PATH [--tokenizer PATH] (--prompt TEXT ... | --prompts-file FILE)
//          [--max-tokens N] [--concurrency N | --batch]
//          [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repetition-penalty R]
//          [--presence-penalty X] [--frequency-penalty X] [--seed S] [--logprobs N]
//          [--stop TEXT ...] [--stop-token-id ID ...] [--ignore-eos]
//          [--kv-blocks N | --kv-cache-bytes N] [--block-size N] [--max-batched-tokens N]
//          [--max-running N] [--prefill-chunk N] [--step-policy mixed|separate]
//          [--max-decode-stall N] [--weight-dtype auto|f32|bf16|int8] [--kv-dtype f32|bf16] [--threads N]
//          [--top-logits K]
//
// PATH is a llama2.c .bin (its tokenizer then given by --tokenizer), a .gguf, or a
// HuggingFace directory. A prompts file holds one JSON string per line. Prompts are
// submitted to the engine --concurrency at a time (--batch: all at once); generation is
// greedy unless --temperature > 0. Prints one JSON line per prompt, in input order:
//   {"prompt_ids": [...], "generated_ids": [...], "text": "...", "finish_reason": "...",
//    "stop_string": "...", "seed": S, "preemptions": N, "logprobs": [[id, lp, [[id, lp]...]]...]}
// text is the streamed continuation (stop strings cut). Generation stops at --max-tokens,
// EOS (not kept), a stop id or string; for llama2.c models BOS (id 1) also ends a story,
// as in run.c. A summary (tokens/s, steps, preemptions) goes to stderr.
//
// --top-logits K instead runs greedy generation directly on the forward pass (no engine,
// no sampling flags) and adds the K largest logits at the last prompt position
// ("top_logits": [[id, logit], ...]); the reference tests use it. --batch and
// --prefill-chunk apply there too.
// Flags take "--name value" or "--name=value"; dashes and underscores are interchangeable.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "model/greedy_runner.h"
#include "model/end_of_generation.h"
#include "model/model_loader.h"
#include "model/tokenizer/tokenizer_loader.h"
#include "nlohmann/json.hpp"
#include "tools/prompts_file.h"
#include "scheduler/engine.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace {

using llmserve::DType;

constexpr const char* kUsage =
    "usage: llmrun --model PATH [--tokenizer PATH] (--prompt TEXT ... | --prompts-file FILE)\n"
    "  generation: [--max-tokens N (256)] [--concurrency N (1) | --batch (all prompts at once)]\n"
    "  sampling:   [--temperature T (0 = greedy)] [--top-k K] [--top-p P] [--min-p P] [--seed S]\n"
    "              [--repetition-penalty R] [--presence-penalty X] [--frequency-penalty X] [--logprobs N]\n"
    "  stopping:   [--stop TEXT ...] [--stop-token-id ID ...] [--ignore-eos]\n"
    "  engine:     [--kv-blocks N | --kv-cache-bytes N (1 GiB)] [--block-size N (16)] [--max-batched-tokens N (512)]\n"
    "              [--max-running N (64)] [--prefill-chunk N (0 = max-batched-tokens)]\n"
    "              [--step-policy mixed|separate] [--max-decode-stall N (4)]\n"
    "  runtime:    [--weight-dtype auto|f32|bf16|int8] [--kv-dtype f32|bf16 (the weight dtype)] [--threads N (0 = all)]\n"
    "  direct:     [--top-logits K]  greedy on the forward pass without the engine, printing the K largest logits\n";

// llmrun's default: greedy (the engine's own default temperature is 1).
llmserve::SamplingParams Greedy() {
  llmserve::SamplingParams p;
  p.temperature = 0.0f;
  return p;
}

struct Args {
  std::string model, tokenizer, prompts_file;
  std::vector<std::string> prompts;
  int64_t max_tokens = 256, prefill_chunk = 0, block_size = 16;
  int top_logits = 0, threads = 0, concurrency = 1;
  bool batch = false;
  DType weight_dtype = llmserve::DefaultWeightDType();
  llmserve::WeightQuant weight_quant = llmserve::WeightQuant::kAuto;  // --weight-dtype auto / int8 / f32|bf16
  DType kv_dtype = DType::kF32;
  bool kv_dtype_set = false;  // else the weight dtype, as the server does
  llmserve::SamplingParams sampling = Greedy();
  bool sampling_flags = false;  // any sampling/stop flag given (refused with --top-logits)
  std::vector<std::string> stop_strings;
  std::vector<int32_t> stop_ids;
  bool ignore_eos = false;
  int64_t kv_blocks = 0, kv_cache_bytes = int64_t{1} << 30;
  int64_t max_batched_tokens = 512, max_running = 64, max_decode_stall = 4;
  llmserve::StepPolicy step_policy = llmserve::StepPolicy::kMixed;
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
absl::Status ParseInt(const std::string& flag, const std::string& v, int64_t lo, int64_t hi, T* out) {
  int64_t x = 0;
  if (!absl::SimpleAtoi(v, &x) || x < lo || x > hi) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": '", v, "' is not an integer in [", lo, ", ", hi, "]"));
  }
  *out = static_cast<T>(x);
  return absl::OkStatus();
}

absl::Status ParseFloat(const std::string& flag, const std::string& v, float* out) {
  double x = 0;
  if (!absl::SimpleAtod(v, &x) || !std::isfinite(x)) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": '", v, "' is not a number"));
  }
  *out = static_cast<float>(x);
  return absl::OkStatus();
}

// Flags with a value: name -> setter.
using Setter = std::function<absl::Status(const std::string& name, const std::string& value)>;

std::map<std::string, Setter> ValuedFlags(Args* a) {
  auto sampling = [a](std::function<absl::Status(const std::string&, const std::string&)> f) {
    return [a, f](const std::string& n, const std::string& v) {
      a->sampling_flags = true;
      return f(n, v);
    };
  };
  llmserve::SamplingParams* s = &a->sampling;
  return {
      {"model", [a](auto&, auto& v) { a->model = v; return absl::OkStatus(); }},
      {"tokenizer", [a](auto&, auto& v) { a->tokenizer = v; return absl::OkStatus(); }},
      {"prompt", [a](auto&, auto& v) { a->prompts.push_back(v); return absl::OkStatus(); }},
      {"prompts-file", [a](auto&, auto& v) { a->prompts_file = v; return absl::OkStatus(); }},
      {"max-tokens", [a](auto& n, auto& v) { return ParseInt(n, v, 1, int64_t{1} << 24, &a->max_tokens); }},
      {"top-logits", [a](auto& n, auto& v) { return ParseInt(n, v, 0, 1 << 24, &a->top_logits); }},
      {"prefill-chunk", [a](auto& n, auto& v) { return ParseInt(n, v, 0, int64_t{1} << 24, &a->prefill_chunk); }},
      {"block-size", [a](auto& n, auto& v) { return ParseInt(n, v, 1, 1024, &a->block_size); }},
      {"threads", [a](auto& n, auto& v) { return ParseInt(n, v, 0, 4096, &a->threads); }},
      {"concurrency", [a](auto& n, auto& v) { return ParseInt(n, v, 1, 1 << 20, &a->concurrency); }},
      {"weight-dtype", [a](auto& n, auto& v) {
         if (v == "auto" || v == "int8") {
           a->weight_quant = v == "auto" ? llmserve::WeightQuant::kAuto : llmserve::WeightQuant::kInt8;
           return absl::OkStatus();
         }
         a->weight_quant = llmserve::WeightQuant::kNone;
         return ParseDType(n, v, &a->weight_dtype);
       }},
      {"kv-dtype", [a](auto& n, auto& v) {
         a->kv_dtype_set = true;
         return ParseDType(n, v, &a->kv_dtype);
       }},
      {"kv-blocks", [a](auto& n, auto& v) { return ParseInt(n, v, 1, int64_t{1} << 30, &a->kv_blocks); }},
      {"kv-cache-bytes", [a](auto& n, auto& v) { return ParseInt(n, v, 1, int64_t{1} << 50, &a->kv_cache_bytes); }},
      {"max-batched-tokens", [a](auto& n, auto& v) { return ParseInt(n, v, 1, 1 << 20, &a->max_batched_tokens); }},
      {"max-running", [a](auto& n, auto& v) { return ParseInt(n, v, 1, 1 << 20, &a->max_running); }},
      {"max-decode-stall", [a](auto& n, auto& v) { return ParseInt(n, v, 1, 1 << 20, &a->max_decode_stall); }},
      {"step-policy", [a](auto&, auto& v) {
         auto p = llmserve::ParseStepPolicy(v);
         if (!p.ok()) return p.status();
         a->step_policy = *p;
         return absl::OkStatus();
       }},
      {"temperature", sampling([s](auto& n, auto& v) { return ParseFloat(n, v, &s->temperature); })},
      {"top-k", sampling([s](auto& n, auto& v) { return ParseInt(n, v, 0, 1 << 30, &s->top_k); })},
      {"top-p", sampling([s](auto& n, auto& v) { return ParseFloat(n, v, &s->top_p); })},
      {"min-p", sampling([s](auto& n, auto& v) { return ParseFloat(n, v, &s->min_p); })},
      {"repetition-penalty", sampling([s](auto& n, auto& v) { return ParseFloat(n, v, &s->repetition_penalty); })},
      {"presence-penalty", sampling([s](auto& n, auto& v) { return ParseFloat(n, v, &s->presence_penalty); })},
      {"frequency-penalty", sampling([s](auto& n, auto& v) { return ParseFloat(n, v, &s->frequency_penalty); })},
      {"seed", sampling([s](auto& n, auto& v) {
         uint64_t x = 0;
         if (!absl::SimpleAtoi(v, &x)) return absl::InvalidArgumentError(absl::StrCat("--", n, ": '", v, "' is not an unsigned integer"));
         s->seed = x;
         return absl::OkStatus();
       })},
      {"logprobs", sampling([s](auto& n, auto& v) {
         s->want_logprobs = true;
         return ParseInt(n, v, 0, 20, &s->logprobs);
       })},
      {"stop", sampling([a](auto&, auto& v) { a->stop_strings.push_back(v); return absl::OkStatus(); })},
      {"stop-token-id", sampling([a](auto& n, auto& v) {
         int32_t id = 0;
         absl::Status st = ParseInt(n, v, 0, int64_t{1} << 30, &id);
         if (st.ok()) a->stop_ids.push_back(id);
         return st;
       })},
  };
}

// Parses argv into *a; sets *help (and stops) on -h/--help.
absl::Status ParseArgs(int argc, char** argv, Args* a, bool* help) {
  const std::map<std::string, Setter> valued = ValuedFlags(a);
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
    if (name == "batch" || name == "ignore-eos") {
      bool on = true;
      if (has_value) {
        if (value == "false" || value == "0") on = false;
        else if (value != "true" && value != "1") return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
      }
      if (name == "batch") a->batch = on;
      else a->ignore_eos = on, a->sampling_flags = true;
      continue;
    }
    const auto it = valued.find(name);
    if (it == valued.end()) return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    if (!has_value) {
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      value = argv[++i];
    }
    if (absl::Status s = it->second(name, value); !s.ok()) return s;
  }
  if (!a->kv_dtype_set) a->kv_dtype = a->weight_dtype;
  if (a->model.empty()) return absl::InvalidArgumentError("--model is required");
  if (a->prompts.empty() == a->prompts_file.empty()) {
    return absl::InvalidArgumentError("give --prompt TEXT (repeatable) or --prompts-file FILE (not both)");
  }
  if (a->top_logits > 0 && a->sampling_flags) {
    return absl::InvalidArgumentError("--top-logits runs greedy on the forward pass; it takes no sampling or stop flags");
  }
  return absl::OkStatus();
}

// The continuation's text for the direct path: Decode(prompt + generated) minus
// Decode(prompt) when the latter is a prefix (keeps a leading space SentencePiece would
// drop from the continuation alone), else Decode(generated).
std::string ContinuationText(const llmserve::Tokenizer& tok, const std::vector<int32_t>& prompt,
                             const std::vector<int32_t>& generated) {
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), generated.begin(), generated.end());
  const std::string full = tok.Decode(all), head = tok.Decode(prompt);
  if (full.compare(0, head.size(), head) == 0) return full.substr(head.size());
  return tok.Decode(generated);
}

std::string Dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

int Fail(const absl::Status& status) {
  std::cerr << "llmrun: " << status.ToString() << "\n";
  return 1;
}

// "eos", "stop_token", "stop_string", "length", "cancelled", "deadline", "error".
std::string FinishName(llmserve::SequenceState s) {
  std::string name = llmserve::SequenceStateName(s);
  if (name.rfind("finished_", 0) == 0) name = name.substr(9);
  return name;
}

// Direct greedy path (--top-logits): RunGreedy on the forward pass.
int RunDirect(const Args& args, llmserve::ModelWeights& weights, const llmserve::Tokenizer& tok,
              const std::vector<std::vector<int32_t>>& prompts, const std::vector<int32_t>& stop_ids) {
  llmserve::RuntimeConfig runtime;
  runtime.weight_dtype = args.weight_dtype;
  runtime.weight_quant = args.weight_quant;
  runtime.kv_dtype = args.kv_dtype;
  runtime.threads = args.threads;
  auto model = llmserve::Transformer::Create(weights, runtime);
  if (!model.ok()) return Fail(model.status());
  llmserve::GreedyOptions opt;
  opt.max_tokens = args.max_tokens;
  opt.prefill_chunk = args.prefill_chunk;
  opt.block_size = args.block_size;
  opt.kv_dtype = args.kv_dtype;
  opt.top_logits = args.top_logits;
  opt.batch = args.batch;
  opt.stop_ids = stop_ids;
  auto results = llmserve::RunGreedy(**model, prompts, opt);
  if (!results.ok()) return Fail(results.status());
  std::string out;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const llmserve::GreedyResult& r = (*results)[i];
    nlohmann::ordered_json j;  // keys in the documented order
    j["prompt_ids"] = prompts[i];
    j["generated_ids"] = r.generated;
    j["text"] = ContinuationText(tok, prompts[i], r.generated);
    nlohmann::ordered_json top = nlohmann::ordered_json::array();
    for (const auto& [id, logit] : r.top_logits) top.push_back({id, logit});
    j["top_logits"] = std::move(top);
    out += Dump(j);
  }
  std::cout << out << std::flush;
  return 0;
}

// Engine path: every prompt a request; --concurrency of them in flight at a time.
int RunEngine(const Args& args, llmserve::ModelWeights& weights, const llmserve::Tokenizer& tok,
              const std::vector<std::vector<int32_t>>& prompts, const std::vector<int32_t>& eos_ids,
              const std::vector<int32_t>& extra_stops) {
  const llmserve::ModelConfig config = weights.config;
  llmserve::RuntimeConfig runtime;
  runtime.weight_dtype = args.weight_dtype;
  runtime.weight_quant = args.weight_quant;
  runtime.kv_dtype = args.kv_dtype;
  runtime.threads = args.threads;
  if (absl::Status s = runtime.Validate(); !s.ok()) return Fail(s);
  auto model = llmserve::Transformer::Create(weights, runtime);
  if (!model.ok()) return Fail(model.status());
  auto kv = llmserve::KvCacheConfig::ForModel(config, args.block_size, args.kv_dtype);
  if (args.kv_blocks > 0) kv.num_blocks = args.kv_blocks;
  else kv.SetBlocksFromBytes(static_cast<size_t>(args.kv_cache_bytes));
  auto cache = llmserve::KvCache::Create(kv);
  if (!cache.ok()) return Fail(cache.status());

  llmserve::EngineConfig ec;
  llmserve::SchedulerConfig& sc = ec.scheduler;
  sc.block_size = static_cast<int32_t>(args.block_size);
  sc.num_blocks = static_cast<int32_t>(std::min<int64_t>(kv.num_blocks, INT32_MAX));
  sc.max_running = static_cast<int32_t>(args.max_running);
  sc.max_batched_tokens = static_cast<int32_t>(std::max(args.max_batched_tokens, args.max_running));
  sc.max_prefill_chunk = static_cast<int32_t>(args.prefill_chunk > 0 ? std::min(args.prefill_chunk, int64_t{sc.max_batched_tokens})
                                                                     : sc.max_batched_tokens);
  sc.max_waiting = static_cast<int32_t>(std::max<size_t>(prompts.size(), 1));
  sc.max_context = static_cast<int32_t>(config.context_length);
  sc.eos_ids = eos_ids;
  sc.step_policy = args.step_policy;
  sc.max_decode_stall = static_cast<int32_t>(args.max_decode_stall);
  if (absl::Status s = ec.Validate(); !s.ok()) return Fail(s);
  auto engine = llmserve::Engine::Create(
      ec, llmserve::MakeTransformerEngineModel(*std::move(model), *std::move(cache), args.threads), &tok);
  if (!engine.ok()) return Fail(engine.status());
  (*engine)->Start();

  std::vector<absl::StatusOr<llmserve::CollectedGeneration>> results(prompts.size(),
                                                                     absl::UnknownError("not run"));
  std::atomic<size_t> next{0};
  const size_t workers = args.batch ? prompts.size() : std::min<size_t>(static_cast<size_t>(args.concurrency), prompts.size());
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      for (size_t i = next.fetch_add(1); i < prompts.size(); i = next.fetch_add(1)) {
        llmserve::EngineRequest req;
        req.request_id = absl::StrCat("prompt-", i + 1);
        req.prompt = prompts[i];
        req.sampling = args.sampling;
        req.stop.max_tokens = static_cast<int32_t>(
            std::max<int64_t>(1, std::min<int64_t>(args.max_tokens, config.context_length - static_cast<int64_t>(prompts[i].size()))));
        req.stop.ignore_eos = args.ignore_eos;
        req.stop.stop_strings = args.stop_strings;
        req.stop.stop_token_ids = args.stop_ids;
        if (!args.ignore_eos) req.stop.stop_token_ids.insert(req.stop.stop_token_ids.end(), extra_stops.begin(), extra_stops.end());
        auto handle = (*engine)->Submit(std::move(req));
        if (!handle.ok()) {
          results[i] = absl::Status(handle.status().code(), absl::StrCat("prompt ", i + 1, ": ", handle.status().message()));
          continue;
        }
        results[i] = llmserve::CollectGeneration(*handle->channel, absl::InfiniteDuration());
      }
    });
  }
  for (auto& t : threads) t.join();
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  const llmserve::EngineStats stats = (*engine)->Stats();
  (*engine)->Stop();

  std::string out;
  int64_t generated = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (!results[i].ok()) return Fail(results[i].status());
    const llmserve::CollectedGeneration& r = *results[i];
    if (r.final_event.reason == llmserve::SequenceState::kFinishedError) return Fail(r.final_event.status);
    generated += static_cast<int64_t>(r.ids.size());
    nlohmann::ordered_json j;  // keys in the documented order
    j["prompt_ids"] = prompts[i];
    j["generated_ids"] = r.ids;
    j["text"] = r.text;
    j["finish_reason"] = FinishName(r.final_event.reason);
    if (!r.final_event.stop_string.empty()) j["stop_string"] = r.final_event.stop_string;
    j["seed"] = r.final_event.seed;
    j["preemptions"] = r.final_event.preemptions;
    if (args.sampling.want_logprobs) {
      nlohmann::ordered_json lps = nlohmann::ordered_json::array();
      for (const llmserve::TokenLogprobs& lp : r.logprobs) {
        nlohmann::ordered_json top = nlohmann::ordered_json::array();
        for (const auto& [id, v] : lp.top) top.push_back({id, v});
        lps.push_back({lp.id, lp.logprob, std::move(top)});
      }
      j["logprobs"] = std::move(lps);
    }
    out += Dump(j);
  }
  std::cout << out << std::flush;
  std::cerr << "llmrun: " << prompts.size() << " prompts, " << generated << " tokens generated in " << wall << " s ("
            << (wall > 0 ? static_cast<double>(generated) / wall : 0.0) << " tok/s); " << stats.steps << " steps, "
            << stats.preemptions << " preemptions, " << sc.num_blocks << " KV blocks of " << sc.block_size << "\n";
  return 0;
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
    auto read = llmserve::ReadPromptsFile(args.prompts_file);
    if (!read.ok()) return Fail(read.status());
    texts = *std::move(read);
  }
  llmserve::EncodeOptions enc;
  enc.add_bos = llama2c || (*tok)->add_bos_default();
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < texts.size(); ++i) {
    auto ids = (*tok)->Encode(texts[i], enc);
    if (!ids.ok()) return Fail(absl::InvalidArgumentError(absl::StrCat("prompt ", i + 1, ": ", ids.status().message())));
    if (ids->empty()) return Fail(absl::InvalidArgumentError(absl::StrCat("prompt ", i + 1, " has no tokens")));
    prompts.push_back(*std::move(ids));
  }

  // The model's end-of-generation ids (the tokenizer's EOS among them), and for llama2.c
  // BOS (a new story).
  const std::vector<int32_t> eos_ids = llmserve::EndOfGenerationIds(config, **tok);
  std::vector<int32_t> extra_stops;
  if (llama2c && std::find(eos_ids.begin(), eos_ids.end(), 1) == eos_ids.end()) extra_stops.push_back(1);
  if (args.top_logits > 0) {
    std::vector<int32_t> stops = extra_stops;
    stops.insert(stops.end(), eos_ids.begin(), eos_ids.end());
    return RunDirect(args, **weights, **tok, prompts, stops);
  }
  return RunEngine(args, **weights, **tok, prompts, eos_ids, extra_stops);
}

}  // namespace

int main(int argc, char** argv) {
  // stdout carries the JSON lines; the engine's per-request log lines go to stderr.
  spdlog::set_default_logger(spdlog::stderr_logger_mt("llmrun"));
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
