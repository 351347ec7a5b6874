#include "tools/llmrun/llmrun_flags.h"

#include <cmath>
#include <optional>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/model_setup.h"

// llmrun-only flags; the engine's are in server/engine_flags.cc. Defaults: Args{}'s;
// the sampling flags are unset unless given (SamplingParams' defaults, greedy).
ABSL_FLAG(std::string, prompts_file, llmserve::llmrun::Args{}.prompts_file,
          "file of prompts, one JSON string per line (instead of --prompt TEXT, which may repeat)");
ABSL_FLAG(int64_t, max_tokens, llmserve::llmrun::Args{}.max_tokens, "generated tokens per prompt at most");
ABSL_FLAG(int32_t, concurrency, llmserve::llmrun::Args{}.concurrency, "prompts submitted to the engine at a time");
ABSL_FLAG(bool, batch, llmserve::llmrun::Args{}.batch, "submit every prompt at once");
ABSL_FLAG(int32_t, top_logits, llmserve::llmrun::Args{}.top_logits,
          "K > 0: greedy on the forward pass without the engine, printing the K largest logits");
ABSL_FLAG(std::optional<float>, temperature, std::nullopt, "sampling temperature (unset: 0 = greedy)");
ABSL_FLAG(std::optional<int32_t>, top_k, std::nullopt, "top-k sampling (0 = all tokens)");
ABSL_FLAG(std::optional<float>, top_p, std::nullopt, "nucleus sampling (1 = off)");
ABSL_FLAG(std::optional<float>, min_p, std::nullopt, "min-p sampling (0 = off)");
ABSL_FLAG(std::optional<float>, repetition_penalty, std::nullopt, "CTRL-style repetition penalty (1 = off)");
ABSL_FLAG(std::optional<float>, presence_penalty, std::nullopt, "presence penalty (0 = off)");
ABSL_FLAG(std::optional<float>, frequency_penalty, std::nullopt, "frequency penalty (0 = off)");
ABSL_FLAG(std::optional<uint64_t>, seed, std::nullopt, "sampling seed (unset: the engine draws one)");
ABSL_FLAG(std::optional<int32_t>, logprobs, std::nullopt, "report logprobs with N alternatives (0..20)");
ABSL_FLAG(bool, ignore_eos, llmserve::llmrun::Args{}.ignore_eos, "generate past EOS");

namespace llmserve::llmrun {
namespace {

constexpr char kUsage[] =
    "--model PATH [--tokenizer PATH] (--prompt TEXT ... | --prompts-file FILE) [flags]\n"
    "Offline generation through the continuous-batching engine (no server), one JSON line per\n"
    "prompt on stdout. The engine flags are llmserve's, with its defaults.\n"
    "  --prompt TEXT, --stop TEXT, --stop-token-id ID: may repeat (so not listed below)\n"
    "Flags take --name=value or --name value; dashes and underscores are interchangeable;\n"
    "--prefill-chunk is the old name of --max-prefill-chunk.";

// Sets *out from an optional float flag; true if it was given.
absl::StatusOr<bool> TakeFloat(const std::string& flag, const std::optional<float>& value, float* out) {
  if (!value.has_value()) return false;
  if (!std::isfinite(*value)) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": not a finite number"));
  *out = *value;
  return true;
}

}  // namespace

CommandLineOptions CommandLineOptionsForLlmrun() {
  CommandLineOptions o;
  o.usage = kUsage;
  o.version = absl::StrCat("llmrun (llmserve ", kLlmserveVersion, ")");
  o.help_files = {"llmrun/llmrun_flags.cc"};
  o.aliases = {{"prefill_chunk", "max_prefill_chunk"}};
  o.repeated = {"prompt", "stop", "stop_token_id"};
  return o;
}

absl::StatusOr<Args> ArgsFromFlags(const CommandLine& command_line) {
  Args a;
  auto spec = EngineSpecFromFlags();
  if (!spec.ok()) return spec.status();
  a.spec = *std::move(spec);
  const auto repeated = [&](const std::string& name) {
    const auto it = command_line.repeated.find(name);
    return it == command_line.repeated.end() ? std::vector<std::string>() : it->second;
  };
  a.prompts = repeated("prompt");
  a.prompts_file = absl::GetFlag(FLAGS_prompts_file);
  a.max_tokens = absl::GetFlag(FLAGS_max_tokens);
  if (absl::Status s = FlagInRange("max-tokens", a.max_tokens, 1, int64_t{1} << 24); !s.ok()) return s;
  a.concurrency = absl::GetFlag(FLAGS_concurrency);
  if (absl::Status s = FlagInRange("concurrency", a.concurrency, 1, 1 << 20); !s.ok()) return s;
  a.batch = absl::GetFlag(FLAGS_batch);
  a.top_logits = absl::GetFlag(FLAGS_top_logits);
  if (absl::Status s = FlagInRange("top-logits", a.top_logits, 0, 1 << 24); !s.ok()) return s;

  SamplingParams& p = a.sampling;
  p.temperature = 0.0f;  // llmrun's default: greedy (the engine's own default temperature is 1)
  const struct {
    const char* flag;
    std::optional<float> value;
    float* out;
  } floats[] = {{"temperature", absl::GetFlag(FLAGS_temperature), &p.temperature},
                {"top-p", absl::GetFlag(FLAGS_top_p), &p.top_p},
                {"min-p", absl::GetFlag(FLAGS_min_p), &p.min_p},
                {"repetition-penalty", absl::GetFlag(FLAGS_repetition_penalty), &p.repetition_penalty},
                {"presence-penalty", absl::GetFlag(FLAGS_presence_penalty), &p.presence_penalty},
                {"frequency-penalty", absl::GetFlag(FLAGS_frequency_penalty), &p.frequency_penalty}};
  for (const auto& f : floats) {
    auto given = TakeFloat(f.flag, f.value, f.out);
    if (!given.ok()) return given.status();
    a.sampling_flags = a.sampling_flags || *given;
  }
  if (const std::optional<int32_t> k = absl::GetFlag(FLAGS_top_k); k.has_value()) {
    if (absl::Status s = FlagInRange("top-k", *k, 0, 1 << 30); !s.ok()) return s;
    p.top_k = *k;
    a.sampling_flags = true;
  }
  if (const std::optional<uint64_t> seed = absl::GetFlag(FLAGS_seed); seed.has_value()) {
    p.seed = *seed;
    a.sampling_flags = true;
  }
  if (const std::optional<int32_t> n = absl::GetFlag(FLAGS_logprobs); n.has_value()) {
    if (absl::Status s = FlagInRange("logprobs", *n, 0, 20); !s.ok()) return s;
    p.want_logprobs = true;
    p.logprobs = *n;
    a.sampling_flags = true;
  }
  a.stop_strings = repeated("stop");
  for (const std::string& v : repeated("stop_token_id")) {
    int64_t id = 0;
    if (!absl::SimpleAtoi(v, &id) || id < 0 || id > (int64_t{1} << 30)) {
      return absl::InvalidArgumentError(absl::StrCat("--stop-token-id=", v, ": not an id in [0, ", 1 << 30, "]"));
    }
    a.stop_ids.push_back(static_cast<int32_t>(id));
  }
  a.ignore_eos = absl::GetFlag(FLAGS_ignore_eos);
  a.sampling_flags = a.sampling_flags || !a.stop_strings.empty() || !a.stop_ids.empty() || a.ignore_eos;

  if (a.spec.model_path.empty()) return absl::InvalidArgumentError("--model is required");
  if (a.prompts.empty() == a.prompts_file.empty()) {
    return absl::InvalidArgumentError("give --prompt TEXT (repeatable) or --prompts-file FILE (not both)");
  }
  if (a.top_logits > 0 && a.sampling_flags) {
    return absl::InvalidArgumentError("--top-logits runs greedy on the forward pass; it takes no sampling or stop flags");
  }
  return a;
}

}  // namespace llmserve::llmrun
