// engine_bench: generated tokens/s and per-step time of the continuous-batching engine
// (no gRPC), closed loop at several concurrencies.
//
//   engine_bench --model PATH [--concurrency 1,4,16,64] [--requests_per_slot 2]
//                [--input-len 128] [--output-len 128] [--json FILE] [engine flags]
//
// The engine flags (--weight-dtype, --threads, --step-policy, --kv-cache-bytes, ...) are
// llmserve's, with its defaults (server/engine_flags.h), and the engine is built as the
// server builds it (BuildEngine), except that --max-running (and --max-batched-tokens
// with it) is raised to the largest concurrency.
//
// For each concurrency C, C client threads each submit a request (random-token prompt of
// --input-len ids, --output-len generated, EOS ignored, greedy), wait for its final event,
// and submit the next, until C × --requests-per-slot requests are done. Reported:
// generated tok/s over the wall time, mean step time (all steps, and decode-only steps),
// the median forward time of full decode steps (C rows, no prompt tokens), mean tokens
// per step, TTFT and end-to-end latency medians, preemptions.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "model/model_loader.h"
#include "nlohmann/json.hpp"
#include "scheduler/engine.h"
#include "server/engine_flags.h"
#include "server/engine_setup.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, concurrency, "1,4,16,64", "comma-separated concurrencies");
ABSL_FLAG(int, requests_per_slot, 2, "requests per concurrent client");
ABSL_FLAG(int, input_len, 128, "prompt tokens per request");
ABSL_FLAG(int, output_len, 128, "generated tokens per request");
ABSL_FLAG(std::string, json, "", "append one JSON object per concurrency to this file");

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Step statistics gathered on the engine thread.
class StepStats : public llmserve::EngineObserver {
 public:
  void OnStep(const llmserve::StepReport& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    const double s = absl::ToDoubleSeconds(r.schedule + r.forward + r.sample + r.emit);
    ++steps_;
    total_s_ += s;
    tokens_ += r.decode_tokens + r.prefill_tokens;
    if (r.prefill_tokens == 0) {
      ++decode_steps_;
      decode_s_ += s;
      decode_forward_s_ += absl::ToDoubleSeconds(r.forward);
      if (r.decode_tokens == full_rows_) full_forward_ms_.push_back(absl::ToDoubleMilliseconds(r.forward));
    }
  }
  // full_rows: the concurrency about to run; its decode-only steps of that many rows are
  // the steady state, comparable with the server's `--log-level trace` step lines.
  void Reset(int full_rows) {
    std::lock_guard<std::mutex> lock(mu_);
    steps_ = decode_steps_ = tokens_ = 0;
    total_s_ = decode_s_ = decode_forward_s_ = 0;
    full_rows_ = full_rows;
    full_forward_ms_.clear();
  }
  nlohmann::ordered_json Json() const {
    std::lock_guard<std::mutex> lock(mu_);
    nlohmann::ordered_json j;
    j["steps"] = steps_;
    j["step_ms_mean"] = steps_ ? 1e3 * total_s_ / static_cast<double>(steps_) : 0.0;
    j["decode_step_ms_mean"] = decode_steps_ ? 1e3 * decode_s_ / static_cast<double>(decode_steps_) : 0.0;
    j["decode_forward_ms_mean"] = decode_steps_ ? 1e3 * decode_forward_s_ / static_cast<double>(decode_steps_) : 0.0;
    j["tokens_per_step"] = steps_ ? static_cast<double>(tokens_) / static_cast<double>(steps_) : 0.0;
    j["full_decode_steps"] = full_forward_ms_.size();
    j["full_decode_forward_ms_p50"] = Median(full_forward_ms_);
    return j;
  }

 private:
  mutable std::mutex mu_;
  int64_t steps_ = 0, decode_steps_ = 0, tokens_ = 0;
  double total_s_ = 0, decode_s_ = 0, decode_forward_s_ = 0;
  int full_rows_ = 0;
  std::vector<double> full_forward_ms_;
};

int Fail(const std::string& msg) {
  std::cerr << "engine_bench: " << msg << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  llmserve::CommandLineOptions options;
  options.usage = "--model PATH [--concurrency 1,4,16,64] [flags]: the engine's tokens/s, closed loop";
  options.version = "engine_bench";
  options.help_files = {"bench/engine_bench.cc"};
  llmserve::ParseCommandLineOrExit(argc, argv, options);
  spdlog::set_level(spdlog::level::warn);  // no per-request log lines in the table
  auto parsed = llmserve::EngineSpecFromFlags();
  if (!parsed.ok()) return Fail(std::string(parsed.status().message()));
  llmserve::EngineSpec spec = *std::move(parsed);
  const std::string path = spec.model_path;
  if (path.empty()) return Fail("--model is required");
  std::vector<int> concurrencies;
  for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_concurrency), ',', absl::SkipEmpty())) {
    int c = 0;
    if (!absl::SimpleAtoi(part, &c) || c < 1) return Fail("--concurrency: bad value");
    concurrencies.push_back(c);
  }
  const int max_c = *std::max_element(concurrencies.begin(), concurrencies.end());
  spec.max_running = std::max(spec.max_running, max_c);
  spec.max_batched_tokens = std::max(spec.max_batched_tokens, spec.max_running);
  if (absl::Status s = spec.Validate(); !s.ok()) return Fail(std::string(s.message()));

  // The server's loading and assembly (its tokenizer gives the same end-of-generation ids).
  auto loaded = llmserve::LoadModelFiles(spec);
  if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
  const llmserve::ModelConfig cfg = loaded->weights->config;
  StepStats stats;
  auto built = llmserve::BuildEngine(spec, *loaded->weights, *loaded->tokenizer, &stats);
  if (!built.ok()) return Fail(std::string(built.status().message()));
  loaded->weights.reset();
  std::unique_ptr<llmserve::Engine>& engine = built->engine;
  const int input_len = absl::GetFlag(FLAGS_input_len), output_len = absl::GetFlag(FLAGS_output_len);
  engine->Start();

  std::printf("%-6s %9s %10s %12s %14s %13s %14s %10s %10s %10s %6s\n", "conc", "requests", "gen tok/s", "step ms",
              "decode step ms", "(of it fwd)", "full fwd p50", "tok/step", "ttft p50", "e2e p50", "preempt");
  for (const int c : concurrencies) {
    const int total = c * absl::GetFlag(FLAGS_requests_per_slot);
    std::atomic<int> next{0}, failed{0};
    std::atomic<int64_t> generated{0};
    std::mutex mu;
    std::vector<double> ttft, e2e;
    stats.Reset(c);
    const int64_t preempt0 = engine->Stats().preemptions;
    const absl::Time start = absl::Now();
    std::vector<std::thread> clients;
    for (int t = 0; t < c; ++t) {
      clients.emplace_back([&, t] {
        std::mt19937 rng(static_cast<uint32_t>(1000 * c + t));
        std::uniform_int_distribution<int32_t> tok(3, static_cast<int32_t>(cfg.vocab_size) - 1);
        while (next.fetch_add(1) < total) {
          llmserve::EngineRequest req;
          for (int i = 0; i < input_len; ++i) req.prompt.push_back(tok(rng));
          req.sampling.temperature = 0;
          req.stop.max_tokens = output_len;
          req.stop.ignore_eos = true;
          auto h = engine->Submit(std::move(req));
          if (!h.ok()) {
            ++failed;
            continue;
          }
          auto got = llmserve::CollectGeneration(*h->channel, absl::Minutes(30));
          if (!got.ok() || got->final_event.reason != llmserve::SequenceState::kFinishedLength) {
            ++failed;
            continue;
          }
          generated += static_cast<int64_t>(got->ids.size());
          std::lock_guard<std::mutex> lock(mu);
          ttft.push_back(absl::ToDoubleSeconds(got->final_event.time_to_first_token));
          e2e.push_back(absl::ToDoubleSeconds(got->final_event.total_time));
        }
      });
    }
    for (auto& th : clients) th.join();
    const double wall = absl::ToDoubleSeconds(absl::Now() - start);
    nlohmann::ordered_json j;
    j["model"] = path;
    j["weight_dtype"] = llmserve::WeightDTypeFlagValue(spec);
    j["kv_dtype"] = std::string(llmserve::DTypeName(spec.EffectiveKvDType()));
    j["step_policy"] = llmserve::StepPolicyName(spec.step_policy);
    j["prefill_policy"] = built->prefill_policy;
    j["threads"] = spec.threads;
    j["concurrency"] = c;
    j["requests"] = total;
    j["failed"] = failed.load();
    j["input_len"] = input_len;
    j["output_len"] = output_len;
    j["wall_s"] = wall;
    j["generated_tok_per_s"] = static_cast<double>(generated.load()) / wall;
    j.update(stats.Json());
    j["ttft_p50_s"] = Median(ttft);
    j["e2e_p50_s"] = Median(e2e);
    j["preemptions"] = engine->Stats().preemptions - preempt0;
    std::printf("%-6d %9d %10.1f %12.2f %14.2f %13.2f %14.2f %10.1f %10.3f %10.3f %6lld\n", c, total,
                j["generated_tok_per_s"].get<double>(), j["step_ms_mean"].get<double>(),
                j["decode_step_ms_mean"].get<double>(), j["decode_forward_ms_mean"].get<double>(),
                j["full_decode_forward_ms_p50"].get<double>(),
                j["tokens_per_step"].get<double>(), Median(ttft),
                Median(e2e), static_cast<long long>(j["preemptions"].get<int64_t>()));
    std::fflush(stdout);
    if (failed.load() > 0) std::fprintf(stderr, "engine_bench: %d requests failed\n", failed.load());
    if (const std::string f = absl::GetFlag(FLAGS_json); !f.empty()) std::ofstream(f, std::ios::app) << j.dump() << "\n";
  }
  engine->Stop();
  return 0;
}
