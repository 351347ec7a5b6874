#include "bench/llmbench/report.h"

#include <map>
#include <string>
#include <vector>

#include "bench/llmbench/stats.h"

namespace llmbench {
namespace {

namespace v1 = llmserve::v1;
using nlohmann::json;

// FINISH_REASON_LENGTH -> "LENGTH".
std::string ReasonName(v1::FinishReason reason) {
  std::string name = v1::FinishReason_Name(reason);
  const std::string prefix = "FINISH_REASON_";
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  return name.empty() ? std::to_string(static_cast<int>(reason)) : name;
}

// grpc::StatusCode -> "UNAVAILABLE".
std::string CodeName(grpc::StatusCode code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  const int c = static_cast<int>(code);
  return c >= 0 && c <= 16 ? kNames[c] : "CODE_" + std::to_string(c);
}

json SummaryJson(std::vector<double>* values) {
  const Summary s = Summarize(values);
  return {{"count", s.count}, {"mean", s.mean}, {"min", s.min}, {"max", s.max},
          {"p50", s.p50},     {"p90", s.p90},   {"p99", s.p99}};
}

json ServerJson(const ServerView& v) {
  const v1::ServerInfo& info = v.have_after ? v.after : v.before;
  json j = {{"info_ok", v.have_before || v.have_after}, {"samples", v.samples},
            {"peak_running", v.peak_running},           {"peak_waiting", v.peak_waiting},
            {"peak_kv_blocks_used", v.peak_kv_blocks_used}};
  if (v.have_before || v.have_after) {
    j["version"] = info.version();
    j["step_policy"] = info.step_policy();
    j["max_running"] = info.max_running();
    j["max_waiting"] = info.max_waiting();
    j["max_batched_tokens"] = info.max_batched_tokens();
    j["kv_blocks_total"] = info.kv_blocks_total();
    j["block_size"] = info.block_size();
    j["prefix_caching"] = info.prefix_caching();
    j["kv_blocks_cached"] = info.kv_blocks_cached();  // the "after" view when there is one
  }
  if (v.have_before && v.have_after) {
    j["preemptions"] = v.after.preemptions_total() - v.before.preemptions_total();
  }
  return j;
}

json ConfigJson(const BenchOptions& o) {
  json j = {{"addr", o.addr},
            {"channels", o.channels},
            {"requests", o.requests},
            {"warmup_requests", o.warmup_requests},
            {"mode", o.closed_loop() ? "closed" : "open"},
            {"concurrency", o.concurrency},
            {"rate", o.rate},
            {"input_len", o.input_len},
            {"output_len", o.output_len},
            {"shared_prefix_len", o.shared_prefix_len},
            {"turns", o.turns},
            {"cache_salt", o.cache_salt},
            {"len_dist", LengthDistName(o.len_dist)},
            {"prompts", o.prompts_file.empty() ? "random-tokens" : o.prompts_file},
            {"ignore_eos", o.ignore_eos},
            {"seed", o.seed},
            {"timeout_s", o.timeout_seconds}};
  if (o.len_dist == LengthDist::kUniform) j["range_ratio"] = o.range_ratio;
  j["temperature"] = o.temperature ? json(*o.temperature) : json(nullptr);
  j["top_k"] = o.top_k ? json(*o.top_k) : json(nullptr);
  j["top_p"] = o.top_p ? json(*o.top_p) : json(nullptr);
  if (o.backend == "llamacpp") j["llamacpp_cache_prompt"] = o.llamacpp_cache_prompt;
  return j;
}

json ModelJson(const v1::ModelInfo& m) {
  return {{"name", m.name()},
          {"architecture", m.architecture()},
          {"vocab_size", m.vocab_size()},
          {"context_length", m.context_length()},
          {"weight_dtype", m.weight_dtype()},
          {"kv_dtype", m.kv_dtype()},
          {"num_parameters", m.num_parameters()}};
}

// cached / prompt tokens, 0 without prompt tokens.
double HitRate(long long cached, long long prompt) {
  return prompt > 0 ? static_cast<double>(cached) / static_cast<double>(prompt) : 0.0;
}

// Per turn index (request i is turn i % turns): OK requests, prompt and cached tokens, the
// hit rate and TTFT of the requests that ended OK, so that the turns' growing prompts and
// cache reuse show apart from each other.
json TurnsJson(const std::vector<RequestResult>& results, int turns) {
  json out = json::array();
  for (int t = 0; t < turns; ++t) {
    int ok = 0;
    long long prompt = 0, cached = 0;
    std::vector<double> ttft;
    for (size_t i = static_cast<size_t>(t); i < results.size(); i += static_cast<size_t>(turns)) {
      const RequestResult& r = results[i];
      if (r.code != grpc::StatusCode::OK || !r.has_final) continue;
      ++ok;
      prompt += r.final_msg.usage().prompt_tokens();
      cached += r.final_msg.usage().cached_tokens();
      if (r.ttft >= 0) ttft.push_back(r.ttft);
    }
    out.push_back({{"turn", t + 1},
                   {"ok", ok},
                   {"prompt_tokens", prompt},
                   {"cached_tokens", cached},
                   {"prefix_hit_rate", HitRate(cached, prompt)},
                   {"ttft_s", SummaryJson(&ttft)}});
  }
  return out;
}

}  // namespace

json BuildReport(const BenchOptions& options, const std::optional<v1::ModelInfo>& model, RunResult* run) {
  std::map<std::string, int> failed_by_code, reasons;
  int ok = 0, failed = 0, no_final = 0, after_final = 0, count_mismatch = 0;
  long long prompt_tokens = 0, generated_tokens = 0, cached_tokens = 0;
  std::vector<double> ttft, itl, tpot, e2e, server_ttft, server_queue;
  for (RequestResult& r : run->results) {
    if (r.has_final) ++reasons[ReasonName(r.final_msg.finish_reason())];
    // Protocol checks: an OK stream must end with a Final; a Final's usage must match.
    const bool missing_final = r.code == grpc::StatusCode::OK && !r.has_final;
    const bool bad_count = r.has_final && r.tokens != r.final_msg.usage().completion_tokens();
    no_final += missing_final;
    after_final += r.message_after_final;
    count_mismatch += bad_count;
    if (r.code != grpc::StatusCode::OK) {
      ++failed;
      ++failed_by_code[CodeName(r.code)];
      continue;
    }
    ++ok;
    generated_tokens += r.tokens;
    if (!r.has_final) continue;
    prompt_tokens += r.final_msg.usage().prompt_tokens();
    cached_tokens += r.final_msg.usage().cached_tokens();
    if (r.ttft >= 0) ttft.push_back(r.ttft);
    e2e.push_back(r.e2e);
    itl.insert(itl.end(), r.itl.begin(), r.itl.end());
    if (r.tokens > 1 && r.ttft >= 0) tpot.push_back((r.e2e - r.ttft) / (r.tokens - 1));
    server_ttft.push_back(r.final_msg.timings().time_to_first_token_seconds());
    server_queue.push_back(r.final_msg.timings().queue_seconds());
  }
  int mismatched = 0;
  for (const RequestResult& r : run->results) {
    mismatched += (r.code == grpc::StatusCode::OK && !r.has_final) || r.message_after_final ||
                  (r.has_final && r.tokens != r.final_msg.usage().completion_tokens());
  }
  const double d = run->duration_seconds;
  auto per_s = [d](double x) { return d > 0 ? x / d : 0.0; };
  json j;
  j["tool"] = "llmbench";
  j["label"] = options.label;
  j["config"] = ConfigJson(options);
  j["model"] = model ? ModelJson(*model) : json(nullptr);
  j["server"] = ServerJson(run->server);
  j["requests"] = {{"total", run->results.size()},
                   {"ok", ok},
                   {"failed", failed},
                   {"failed_by_code", failed_by_code},
                   {"mismatches", mismatched},
                   {"mismatch_detail",
                    {{"no_final", no_final}, {"message_after_final", after_final}, {"token_count", count_mismatch}}},
                   {"finish_reasons", reasons}};
  j["duration_s"] = d;
  j["request_throughput"] = per_s(ok);
  j["prompt_tokens"] = prompt_tokens;
  j["cached_tokens"] = cached_tokens;
  j["prefix_hit_rate"] = HitRate(cached_tokens, prompt_tokens);
  j["generated_tokens"] = generated_tokens;
  j["prompt_tok_s"] = per_s(static_cast<double>(prompt_tokens));
  j["gen_tok_s"] = per_s(static_cast<double>(generated_tokens));
  j["total_tok_s"] = per_s(static_cast<double>(prompt_tokens + generated_tokens));
  j["ttft_s"] = SummaryJson(&ttft);
  j["itl_s"] = SummaryJson(&itl);
  j["tpot_s"] = SummaryJson(&tpot);
  j["e2e_s"] = SummaryJson(&e2e);
  j["server_ttft_s"] = SummaryJson(&server_ttft);
  j["server_queue_s"] = SummaryJson(&server_queue);
  if (options.turns > 1) j["turns"] = TurnsJson(run->results, options.turns);
  return j;
}

void PrintTable(const json& r, std::FILE* out) {
  const json& c = r["config"];
  const json& q = r["requests"];
  const json& s = r["server"];
  std::fprintf(out, "============ llmbench serving benchmark ============\n");
  if (r["model"].is_object()) {
    const json& m = r["model"];
    std::fprintf(out, "%-28s %s (%s, vocab %d, weights %s, KV %s)\n", "Model:", m["name"].get<std::string>().c_str(),
                 m["architecture"].get<std::string>().c_str(), m["vocab_size"].get<int>(),
                 m["weight_dtype"].get<std::string>().c_str(), m["kv_dtype"].get<std::string>().c_str());
  } else {
    std::fprintf(out, "%-28s (GetModelInfo failed)\n", "Model:");
  }
  if (s.contains("version")) {
    std::fprintf(out, "%-28s llmserve %s, step policy %s, max running %d, KV blocks %d x %d\n", "Server:",
                 s["version"].get<std::string>().c_str(), s["step_policy"].get<std::string>().c_str(),
                 s["max_running"].get<int>(), s["kv_blocks_total"].get<int>(), s["block_size"].get<int>());
  }
  const std::string mode = c["mode"] == "closed"
                               ? "closed loop, concurrency " + std::to_string(c["concurrency"].get<int>())
                               : "open loop, " + std::to_string(c["rate"].get<double>()) + " req/s";
  std::fprintf(out, "%-28s %d %s, %s, input %d, output %d (%s)%s\n", "Workload:", c["requests"].get<int>(),
               c["turns"].get<int>() > 1 ? "conversations" : "requests", mode.c_str(), c["input_len"].get<int>(),
               c["output_len"].get<int>(), c["len_dist"].get<std::string>().c_str(),
               c["ignore_eos"].get<bool>() ? ", ignore EOS" : "");
  if (c.value("warmup_requests", 0) > 0) {
    std::fprintf(out, "%-28s %d before the run, not measured\n", "Warm-up:", c["warmup_requests"].get<int>());
  }
  if (c["shared_prefix_len"].get<int>() > 0 || c["turns"].get<int>() > 1) {
    std::fprintf(out, "%-28s shared prefix %d tokens, %d turn(s)%s\n", "Prefix / turns:",
                 c["shared_prefix_len"].get<int>(), c["turns"].get<int>(),
                 c["cache_salt"].get<std::string>().empty() ? "" : ", cache salt set");
  }
  std::fprintf(out, "%-28s %d / %d\n", "Requests ok / failed:", q["ok"].get<int>(), q["failed"].get<int>());
  for (const auto& [code, n] : q["failed_by_code"].items()) {
    std::fprintf(out, "  %-26s %d\n", code.c_str(), n.get<int>());
  }
  std::fprintf(out, "%-28s %d\n", "Mismatches:", q["mismatches"].get<int>());
  std::fprintf(out, "%-28s %.2f s\n", "Duration:", r["duration_s"].get<double>());
  std::fprintf(out, "%-28s %.2f req/s\n", "Request throughput:", r["request_throughput"].get<double>());
  std::fprintf(out, "%-28s %lld, %.1f tok/s\n", "Prompt tokens:", r["prompt_tokens"].get<long long>(),
               r["prompt_tok_s"].get<double>());
  std::fprintf(out, "%-28s %lld of %lld prompt tokens, hit rate %.1f%%\n", "Cached tokens:",
               r["cached_tokens"].get<long long>(), r["prompt_tokens"].get<long long>(),
               100 * r["prefix_hit_rate"].get<double>());
  std::fprintf(out, "%-28s %lld, %.1f tok/s\n", "Generated tokens:", r["generated_tokens"].get<long long>(),
               r["gen_tok_s"].get<double>());
  std::fprintf(out, "%-28s %10s %10s %10s %10s %10s\n", "Latency (ms)", "mean", "p50", "p90", "p99", "max");
  const std::pair<const char*, const char*> rows[] = {{"TTFT", "ttft_s"},
                                                      {"ITL (per token)", "itl_s"},
                                                      {"TPOT", "tpot_s"},
                                                      {"E2E", "e2e_s"},
                                                      {"server TTFT", "server_ttft_s"},
                                                      {"server queue", "server_queue_s"}};
  for (const auto& [label, key] : rows) {
    const json& x = r[key];
    std::fprintf(out, "  %-26s %10.2f %10.2f %10.2f %10.2f %10.2f\n", label, 1e3 * x["mean"].get<double>(),
                 1e3 * x["p50"].get<double>(), 1e3 * x["p90"].get<double>(), 1e3 * x["p99"].get<double>(),
                 1e3 * x["max"].get<double>());
  }
  if (r.contains("turns")) {
    std::fprintf(out, "%-28s %10s %10s %10s %10s\n", "Per turn", "ok", "prompt", "hit rate", "TTFT p50");
    for (const json& t : r["turns"]) {
      std::fprintf(out, "  turn %-21d %10d %10lld %9.1f%% %8.2f ms\n", t["turn"].get<int>(), t["ok"].get<int>(),
                   t["prompt_tokens"].get<long long>(), 100 * t["prefix_hit_rate"].get<double>(),
                   1e3 * t["ttft_s"]["p50"].get<double>());
    }
  }
  if (s.contains("prefix_caching")) {
    std::fprintf(out, "%-28s %s, KV blocks cached %d (after the run)\n", "Server prefix caching:",
                 s["prefix_caching"].get<bool>() ? "on" : "off", s["kv_blocks_cached"].get<int>());
  }
  std::fprintf(out, "%-28s running %d, waiting %d, KV blocks used %d, preemptions %s (%d polls)\n",
               "Server peaks:", s["peak_running"].get<int>(), s["peak_waiting"].get<int>(),
               s["peak_kv_blocks_used"].get<int>(), s.contains("preemptions") ? s["preemptions"].dump().c_str() : "?",
               s["samples"].get<int>());
  std::fprintf(out, "====================================================\n");
}

int ProblemCount(const json& report) {
  return report["requests"]["failed"].get<int>() + report["requests"]["mismatches"].get<int>();
}

}  // namespace llmbench
