// llmserve: the gRPC server binary. Flags → ServerConfig (validated) → RunServer
// (server/server_runner.h has the startup and shutdown sequence).
//
// Flags take "--name=value" or "--name value"; dashes and underscores in names are
// interchangeable. A bad flag or value: a message on stderr and exit code 2.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "scheduler/scheduler.h"
#include "server/model_setup.h"
#include "server/server_config.h"
#include "server/server_runner.h"
#include "server/signals.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, model, "",
          "model: llama2.c .bin, .gguf file or HuggingFace directory; empty = the built-in demo model "
          "(random weights, meaningless text)");
ABSL_FLAG(std::string, tokenizer, "", "tokenizer file or directory; empty = the model's own (llama2.c needs one)");
ABSL_FLAG(std::string, model_name, "", "name GetModelInfo reports; empty = from the model path");
ABSL_FLAG(std::string, chat_template, "",
          "Jinja chat template file for chat inputs; empty = the model's own (tokenizer_config.json, GGUF)");
ABSL_FLAG(std::string, host, "0.0.0.0", "address to listen on");
ABSL_FLAG(int32_t, port, 50051, "gRPC port (0 = any free port, logged)");
ABSL_FLAG(int32_t, metrics_port, 9400, "Prometheus metrics port (GET /metrics on --host; 0 = off)");
ABSL_FLAG(std::string, metrics_prefix, "llmserve_",
          "metric name prefix, [a-zA-Z_:][a-zA-Z0-9_:]* (e.g. vllm: for vLLM dashboards)");
ABSL_FLAG(int32_t, threads, 0, "compute threads (0 = all cores)");
ABSL_FLAG(std::string, weight_dtype, "auto",
          "auto, f32, bf16 or int8: auto keeps a quantized file's types (Q4_K, Q8_0, ...) and computes the rest "
          "in bf16 on CPUs with avx512_bf16, else f32; f32/bf16 convert every weight (dequantizing); int8 "
          "quantizes every weight at load to blocks of 32 with one scale (Q8_0)");
ABSL_FLAG(std::string, kv_dtype, "auto", "KV cache element type: f32 or bf16; auto = the weight dtype");
ABSL_FLAG(std::string, kv_cache_bytes, "2G",
          "KV cache budget (K/M/G/T suffixes), capped to max-running full contexts");
ABSL_FLAG(int32_t, kv_blocks, 0, "exact number of KV blocks (overrides --kv-cache-bytes; 0 = from the budget)");
ABSL_FLAG(int32_t, block_size, 16, "tokens per KV block");
ABSL_FLAG(int32_t, max_running, 64, "sequences in the running batch at once");
ABSL_FLAG(int32_t, max_batched_tokens, 512, "tokens per engine step (decode + prefill), >= --max-running");
ABSL_FLAG(int32_t, max_prefill_chunk, 0, "prompt tokens per sequence per step (0 = --max-batched-tokens)");
ABSL_FLAG(int32_t, max_waiting, 256, "queued requests beyond which Generate gets RESOURCE_EXHAUSTED");
ABSL_FLAG(std::string, step_policy, "mixed", "mixed (decode and prefill in one step) or separate");
ABSL_FLAG(int32_t, max_decode_stall, 4, "separate policy: prefill steps in a row while decodes wait");
ABSL_FLAG(std::string, piggyback, "auto",
          "mixed policy: fill decode steps with prompt tokens up to --mixed-step-tokens rows (on), never (off), "
          "or where the extra rows are nearly free (auto: decode steps bound by the weight stream; measured at "
          "start-up once and logged)");
ABSL_FLAG(int32_t, prefill_spread_steps, 128,
          "piggybacking: only while the pending prompt tokens fit in this many filled decode steps, else "
          "prefill in bulk (0 = piggybacking off)");
ABSL_FLAG(int32_t, mixed_step_tokens, 12,
          "mixed policy with piggybacking: rows a decode step is filled up to with prompt tokens (about where a "
          "decode step stops costing just one read of the weights)");
ABSL_FLAG(int32_t, channel_capacity, 32, "output deltas queued per stream before they coalesce");
ABSL_FLAG(int32_t, drain_delay, 0,
          "seconds after SIGTERM/SIGINT during which the server still serves, health NOT_SERVING (time for load "
          "balancers to notice) before it refuses new calls");
ABSL_FLAG(int32_t, drain_timeout, 30,
          "seconds in-flight streams may take to finish once new calls are refused (after --drain-delay)");
ABSL_FLAG(std::string, log_level, "info", "trace (adds a line per engine step), debug, info, warn or error");

namespace {

using llmserve::ServerConfig;

// Flag names (as defined, with underscores) in --help order, with group headings ("#...").
const std::vector<std::string>& FlagOrder() {
  static const std::vector<std::string> order = {
      "#model", "model", "tokenizer", "model_name", "chat_template", "weight_dtype", "kv_dtype", "threads",
      "#network", "host", "port", "metrics_port", "metrics_prefix",
      "#engine", "kv_cache_bytes", "kv_blocks", "block_size", "max_running", "max_batched_tokens",
      "max_prefill_chunk", "max_waiting", "step_policy", "max_decode_stall",
      "piggyback", "prefill_spread_steps", "mixed_step_tokens", "channel_capacity",
      "#lifecycle", "drain_delay", "drain_timeout", "log_level"};
  return order;
}

std::string Dashed(const std::string& name) { return absl::StrReplaceAll(name, {{"_", "-"}}); }

void PrintHelp() {
  std::cout << "usage: llmserve [--flag=value ...]\n"
               "Serves a language model over gRPC (llmserve.v1.LlmService, grpc.health.v1.Health, reflection).\n"
               "SIGTERM/SIGINT: health NOT_SERVING; after --drain-delay the port closes (new calls are refused)\n"
               "and in-flight streams finish (up to --drain-timeout); exit 0. A second signal exits at once.\n"
               "Flags take --name=value or --name value; dashes and underscores are interchangeable.\n";
  for (const std::string& name : FlagOrder()) {
    if (name[0] == '#') {
      std::cout << "\n" << name.substr(1) << ":\n";
      continue;
    }
    const absl::CommandLineFlag* f = absl::FindCommandLineFlag(name);
    if (f == nullptr) continue;
    const std::string def = f->DefaultValue();
    std::cout << "  --" << Dashed(name) << " (default: " << (def.empty() ? "\"\"" : def) << ")\n      " << f->Help()
              << "\n";
  }
  std::cout << "\n  --help, --version\n";
}

// Parses argv into the flags above. Sets *exit_now for --help / --version.
absl::Status ParseFlags(int argc, char** argv, bool* exit_now) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help" || arg == "-help" || arg == "--helpfull") {
      PrintHelp();
      *exit_now = true;
      return absl::OkStatus();
    }
    if (arg == "--version") {
      std::cout << "llmserve " << llmserve::kLlmserveVersion << "\n";
      *exit_now = true;
      return absl::OkStatus();
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg, "' (flags start with --)"));
    }
    const size_t eq = arg.find('=');
    const std::string name = absl::StrReplaceAll(arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2),
                                                 {{"-", "_"}});
    bool known = false;
    for (const std::string& n : FlagOrder()) known = known || n == name;
    absl::CommandLineFlag* flag = known ? absl::FindCommandLineFlag(name) : nullptr;
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", Dashed(name), " (see --help)"));
    }
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--", Dashed(name), " needs a value"));
    }
    if (std::string error; !flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat("--", Dashed(name), "=", value, ": ", error));
    }
  }
  return absl::OkStatus();
}

// The parsed flags as a validated config.
absl::StatusOr<ServerConfig> ConfigFromFlags() {
  ServerConfig c;
  c.model_path = absl::GetFlag(FLAGS_model);
  c.tokenizer_path = absl::GetFlag(FLAGS_tokenizer);
  c.model_name = absl::GetFlag(FLAGS_model_name);
  c.chat_template_path = absl::GetFlag(FLAGS_chat_template);
  c.host = absl::GetFlag(FLAGS_host);
  c.port = absl::GetFlag(FLAGS_port);
  c.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  c.metrics_prefix = absl::GetFlag(FLAGS_metrics_prefix);
  c.threads = absl::GetFlag(FLAGS_threads);
  if (absl::Status s = llmserve::ParseWeightDType("weight-dtype", absl::GetFlag(FLAGS_weight_dtype), &c); !s.ok()) {
    return s;
  }
  auto kv = llmserve::ParseComputeDType("kv-dtype", absl::GetFlag(FLAGS_kv_dtype), /*allow_auto=*/true);
  if (!kv.ok()) return kv.status();
  c.kv_dtype = *kv;
  auto bytes = llmserve::ParseByteSize("kv-cache-bytes", absl::GetFlag(FLAGS_kv_cache_bytes));
  if (!bytes.ok()) return bytes.status();
  c.kv_cache_bytes = *bytes;
  c.kv_blocks = absl::GetFlag(FLAGS_kv_blocks);
  c.block_size = absl::GetFlag(FLAGS_block_size);
  c.max_running = absl::GetFlag(FLAGS_max_running);
  c.max_batched_tokens = absl::GetFlag(FLAGS_max_batched_tokens);
  c.max_prefill_chunk = absl::GetFlag(FLAGS_max_prefill_chunk);
  c.max_waiting = absl::GetFlag(FLAGS_max_waiting);
  auto policy = llmserve::ParseStepPolicy(absl::GetFlag(FLAGS_step_policy));
  if (!policy.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--step-policy=", absl::GetFlag(FLAGS_step_policy), ": must be mixed or separate"));
  }
  c.step_policy = *policy;
  c.max_decode_stall = absl::GetFlag(FLAGS_max_decode_stall);
  auto piggyback = llmserve::ParsePiggyback(absl::GetFlag(FLAGS_piggyback));
  if (!piggyback.ok()) return absl::InvalidArgumentError(absl::StrCat("--", piggyback.status().message()));
  c.piggyback = *piggyback;
  c.prefill_spread_steps = absl::GetFlag(FLAGS_prefill_spread_steps);
  c.mixed_step_tokens = absl::GetFlag(FLAGS_mixed_step_tokens);
  c.channel_capacity = absl::GetFlag(FLAGS_channel_capacity);
  c.drain_delay_seconds = absl::GetFlag(FLAGS_drain_delay);
  c.drain_timeout_seconds = absl::GetFlag(FLAGS_drain_timeout);
  c.log_level = absl::GetFlag(FLAGS_log_level);
  if (absl::Status s = c.Validate(); !s.ok()) return s;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread exists, so that every thread inherits the blocked signals.
  auto signals = llmserve::SignalWatcher::Start();
  if (!signals.ok()) {
    std::cerr << "llmserve: " << signals.status().message() << "\n";
    return 1;
  }
  bool exit_now = false;
  if (absl::Status s = ParseFlags(argc, argv, &exit_now); !s.ok()) {
    std::cerr << "llmserve: " << s.message() << "\n";
    return 2;
  }
  if (exit_now) return 0;
  absl::StatusOr<ServerConfig> config = ConfigFromFlags();
  if (!config.ok()) {
    std::cerr << "llmserve: " << config.status().message() << "\n";
    return 2;
  }
  spdlog::set_default_logger(spdlog::stderr_logger_mt("llmserve"));
  spdlog::set_level(spdlog::level::from_str(config->log_level));
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  return llmserve::RunServer(*config, **signals);
}
