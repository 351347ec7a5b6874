#include "server/engine_flags.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>

#include "absl/flags/flag.h"
#include "absl/flags/internal/parse.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/str_cat.h"

// Defaults: EngineSpec's, so that a default lives in one place (server/engine_spec.h).
ABSL_FLAG(std::string, model, llmserve::EngineSpec{}.model_path,
          "model: llama2.c .bin, .gguf file or HuggingFace directory; empty = the built-in demo model "
          "(random weights, meaningless text)");
ABSL_FLAG(std::string, tokenizer, llmserve::EngineSpec{}.tokenizer_path,
          "tokenizer file or directory; empty = the model's own (llama2.c needs one)");
ABSL_FLAG(int32_t, threads, llmserve::EngineSpec{}.threads, "compute threads (0 = all cores)");
ABSL_FLAG(std::string, weight_dtype, llmserve::WeightDTypeFlagValue(llmserve::EngineSpec{}),
          "auto, f32, bf16 or int8: auto keeps a quantized file's types (Q4_K, Q8_0, ...) and computes the rest "
          "in bf16 on CPUs with avx512_bf16, else f32; f32/bf16 convert every weight (dequantizing); int8 "
          "quantizes every weight at load to blocks of 32 with one scale (Q8_0)");
ABSL_FLAG(std::string, kv_dtype, llmserve::KvDTypeFlagValue(llmserve::EngineSpec{}),
          "KV cache element type: f32 or bf16; auto = the weight dtype");
ABSL_FLAG(std::string, kv_cache_bytes, llmserve::FormatByteSize(llmserve::EngineSpec{}.kv_cache_bytes),
          "KV cache budget (K/M/G/T suffixes), capped to max-running full contexts");
ABSL_FLAG(int32_t, kv_blocks, llmserve::EngineSpec{}.kv_blocks,
          "exact number of KV blocks (overrides --kv-cache-bytes; 0 = from the budget)");
ABSL_FLAG(int32_t, block_size, llmserve::EngineSpec{}.block_size, "tokens per KV block");
ABSL_FLAG(int32_t, max_running, llmserve::EngineSpec{}.max_running, "sequences in the running batch at once");
ABSL_FLAG(int32_t, max_batched_tokens, llmserve::EngineSpec{}.max_batched_tokens,
          "tokens per engine step (decode + prefill), >= --max-running");
ABSL_FLAG(int32_t, max_prefill_chunk, llmserve::EngineSpec{}.max_prefill_chunk,
          "prompt tokens per sequence per step (0 = --max-batched-tokens)");
ABSL_FLAG(int32_t, max_waiting, llmserve::EngineSpec{}.max_waiting,
          "queued requests beyond which a new one is refused (the server's Generate: RESOURCE_EXHAUSTED)");
ABSL_FLAG(std::string, step_policy, llmserve::StepPolicyName(llmserve::EngineSpec{}.step_policy),
          "mixed (decode and prefill in one step) or separate");
ABSL_FLAG(int32_t, max_decode_stall, llmserve::EngineSpec{}.max_decode_stall,
          "separate policy: prefill steps in a row while decodes wait");
ABSL_FLAG(std::string, piggyback, llmserve::PiggybackName(llmserve::EngineSpec{}.piggyback),
          "mixed policy: fill decode steps with prompt tokens up to --mixed-step-tokens rows (on), never (off), "
          "or where the extra rows are nearly free (auto: decode steps bound by the weight stream; measured at "
          "start-up once, resolved to a fixed policy and logged)");
ABSL_FLAG(int32_t, prefill_spread_steps, llmserve::EngineSpec{}.prefill_spread_steps,
          "piggybacking: only while the pending prompt tokens fit in this many filled decode steps, else "
          "prefill in bulk (0 = piggybacking off)");
ABSL_FLAG(int32_t, mixed_step_tokens, llmserve::EngineSpec{}.mixed_step_tokens,
          "mixed policy with piggybacking: rows a decode step is filled up to with prompt tokens (about where a "
          "decode step stops costing just one read of the weights)");
ABSL_FLAG(int32_t, prompt_pack_rows, llmserve::EngineSpec{}.prompt_pack_rows,
          "after a step's first prompt, another sequence's prompt joins it only when it ends there and has fewer "
          "rows than the step's decode rows plus this many (the rows a step's read of the weights is worth): "
          "longer prompts are computed one after another, so each gets its first token sooner; 0 = pack prompts "
          "up to --max-batched-tokens");
ABSL_FLAG(std::string, prefix_caching, llmserve::EngineSpec{}.prefix_caching ? "on" : "off",
          "on: keep computed KV blocks after their requests end and share them with later requests whose "
          "prompts start with the same tokens (and cache_salt); off: every prompt is computed in full");
ABSL_FLAG(int32_t, channel_capacity, llmserve::EngineSpec{}.channel_capacity,
          "output deltas queued per stream before they coalesce");

// absl reports a bad command line (unknown flag, bad value, missing value) on stderr and
// then calls this hook (usage_config.h) before its own exit(1): exit with our code.
extern "C" void ABSL_INTERNAL_C_SYMBOL(AbslInternalReportFatalUsageError)(absl::string_view) {
  std::exit(llmserve::kBadFlagsExitCode);
}

namespace llmserve {
namespace {

// "/src/llmserve/server/main.cc" -> "server/main.cc": --help's file headings, and the
// names CommandLineOptions::help_files matches.
std::string LastTwoPathParts(absl::string_view path) {
  const size_t last = path.rfind('/');
  if (last == absl::string_view::npos || last == 0) return std::string(path);
  const size_t before = path.rfind('/', last - 1);
  return std::string(before == absl::string_view::npos ? path : path.substr(before + 1));
}

std::string BaseName(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path : path.substr(slash + 1));
}

[[noreturn]] void BadCommandLine(const std::string& program, const std::string& message) {
  std::cerr << program << ": " << message << "\n";
  std::exit(kBadFlagsExitCode);
}

}  // namespace

CommandLine ParseCommandLineOrExit(int argc, char** argv, const CommandLineOptions& options) {
  const std::string program = argc > 0 ? BaseName(argv[0]) : std::string("llmserve");
  // absl allows one usage message per process (a second is fatal): the first call's.
  static std::once_flag usage_once;
  std::call_once(usage_once, [&] { absl::SetProgramUsageMessage(options.usage); });
  std::set<std::string> files(options.help_files.begin(), options.help_files.end());
  files.insert("server/engine_flags.cc");
  // absl's --help lists only the flags of the files it deems the program's main one
  // (named after the binary); ours live elsewhere.
  const auto shown = [files](absl::string_view file) { return files.count(std::string(file)) > 0; };
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = shown;
  usage.contains_helpshort_flags = shown;
  usage.contains_helppackage_flags = shown;
  usage.version_string = [version = options.version] { return version + "\n"; };
  usage.normalize_filename = LastTwoPathParts;
  absl::SetFlagsUsageConfig(usage);

  // Dashed names to underscored ones, aliases resolved, repeatable flags taken out. A
  // non-bool flag's separate value ("--model PATH") is passed on untouched.
  CommandLine out;
  std::vector<std::string> args = {argc > 0 ? argv[0] : program};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {  // the end of the flags: the rest as is (absl: positional)
      args.insert(args.end(), argv + i, argv + argc);
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      args.push_back(arg);
      continue;
    }
    const size_t dashes = arg[1] == '-' ? 2 : 1;
    const size_t eq = arg.find('=');
    std::string name = arg.substr(dashes, eq == std::string::npos ? std::string::npos : eq - dashes);
    std::replace(name.begin(), name.end(), '-', '_');
    if (name == "h") name = "help";
    if (const auto alias = options.aliases.find(name); alias != options.aliases.end()) name = alias->second;
    if (std::find(options.repeated.begin(), options.repeated.end(), name) != options.repeated.end()) {
      if (eq != std::string::npos) {
        out.repeated[name].push_back(arg.substr(eq + 1));
      } else if (i + 1 < argc) {
        out.repeated[name].push_back(argv[++i]);
      } else {
        BadCommandLine(program, absl::StrCat("--", name, " needs a value"));
      }
      continue;
    }
    args.push_back(absl::StrCat("--", name, eq == std::string::npos ? "" : arg.substr(eq)));
    if (eq == std::string::npos && i + 1 < argc) {
      const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
      if (flag != nullptr && !flag->IsOfType<bool>()) args.push_back(argv[++i]);
    }
  }
  std::vector<char*> ptrs;
  for (std::string& a : args) ptrs.push_back(a.data());
  ptrs.push_back(nullptr);

  // absl::ParseCommandLine without its usage handling (this version exits 1 after
  // --help), which follows below with exit code 0.
  const std::vector<char*> positional = absl::flags_internal::ParseCommandLineImpl(
      static_cast<int>(args.size()), ptrs.data(), absl::flags_internal::ArgvListAction::kRemoveParsedArgs,
      absl::flags_internal::UsageFlagsAction::kIgnoreUsage, absl::flags_internal::OnUndefinedFlag::kAbortIfUndefined);
  if (absl::flags_internal::HandleUsageFlags(std::cout, absl::ProgramUsageMessage()) >= 0) std::exit(0);
  if (positional.size() > 1) {
    BadCommandLine(program, absl::StrCat("unexpected argument '", positional[1], "' (flags start with --)"));
  }
  return out;
}

absl::StatusOr<EngineSpec> EngineSpecFromFlags() {
  EngineSpec s;
  s.model_path = absl::GetFlag(FLAGS_model);
  s.tokenizer_path = absl::GetFlag(FLAGS_tokenizer);
  s.threads = absl::GetFlag(FLAGS_threads);
  if (absl::Status st = ParseWeightDType("weight-dtype", absl::GetFlag(FLAGS_weight_dtype), &s); !st.ok()) return st;
  auto kv = ParseComputeDType("kv-dtype", absl::GetFlag(FLAGS_kv_dtype), /*allow_auto=*/true);
  if (!kv.ok()) return kv.status();
  s.kv_dtype = *kv;
  auto bytes = ParseByteSize("kv-cache-bytes", absl::GetFlag(FLAGS_kv_cache_bytes));
  if (!bytes.ok()) return bytes.status();
  s.kv_cache_bytes = *bytes;
  s.kv_blocks = absl::GetFlag(FLAGS_kv_blocks);
  s.block_size = absl::GetFlag(FLAGS_block_size);
  s.max_running = absl::GetFlag(FLAGS_max_running);
  s.max_batched_tokens = absl::GetFlag(FLAGS_max_batched_tokens);
  s.max_prefill_chunk = absl::GetFlag(FLAGS_max_prefill_chunk);
  s.max_waiting = absl::GetFlag(FLAGS_max_waiting);
  auto policy = ParseStepPolicy(absl::GetFlag(FLAGS_step_policy));
  if (!policy.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--step-policy=", absl::GetFlag(FLAGS_step_policy), ": must be mixed or separate"));
  }
  s.step_policy = *policy;
  s.max_decode_stall = absl::GetFlag(FLAGS_max_decode_stall);
  auto piggyback = ParsePiggyback(absl::GetFlag(FLAGS_piggyback));
  if (!piggyback.ok()) return absl::InvalidArgumentError(absl::StrCat("--", piggyback.status().message()));
  s.piggyback = *piggyback;
  s.prefill_spread_steps = absl::GetFlag(FLAGS_prefill_spread_steps);
  s.mixed_step_tokens = absl::GetFlag(FLAGS_mixed_step_tokens);
  s.prompt_pack_rows = absl::GetFlag(FLAGS_prompt_pack_rows);
  absl::StatusOr<bool> prefix_caching = ParseOnOff("prefix-caching", absl::GetFlag(FLAGS_prefix_caching));
  if (!prefix_caching.ok()) return prefix_caching.status();
  s.prefix_caching = *prefix_caching;
  s.channel_capacity = absl::GetFlag(FLAGS_channel_capacity);
  if (absl::Status st = s.Validate(); !st.ok()) return st;
  return s;
}

}  // namespace llmserve
