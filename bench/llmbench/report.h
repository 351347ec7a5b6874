// llmbench's results: one JSON object (the source of truth, written with --json / --jsonl)
// and a table on stdout rendered from it.
//
// JSON fields (times in seconds): tool, label (--label), config{...}, model{...} (GetModelInfo; null if it
// failed), server{...} (GetServerInfo before/after and peaks while running; prefix_caching
// and kv_blocks_cached from the "after" view),
// requests{total, ok, failed, failed_by_code{CODE: n}, mismatches, mismatch_detail{...},
// finish_reasons{REASON: n}}, duration_s, request_throughput (req/s), prompt_tokens,
// cached_tokens (sum of usage.cached_tokens: prompt tokens whose KV came from the prefix
// cache), prefix_hit_rate (cached / prompt tokens), generated_tokens, prompt_tok_s,
// gen_tok_s, total_tok_s, and latency summaries {count, mean, min, max, p50, p90, p99}
// ttft_s, itl_s, tpot_s, e2e_s, server_ttft_s, server_queue_s; with --turns > 1 also
// turns[{turn (1-based), ok, prompt_tokens, cached_tokens, prefix_hit_rate, ttft_s}].
// Token counts and latencies cover the requests that ended OK.
#pragma once

#include <cstdio>
#include <optional>

#include "bench/llmbench/options.h"
#include "bench/llmbench/runner.h"
#include "llmserve/v1/llmserve.pb.h"
#include "nlohmann/json.hpp"

namespace llmbench {

// The report for a finished run. `model` is GetModelInfo's answer when it succeeded.
nlohmann::json BuildReport(const BenchOptions& options, const std::optional<llmserve::v1::ModelInfo>& model,
                           RunResult* run);

// The human-readable table (vLLM benchmark style) to `out`.
void PrintTable(const nlohmann::json& report, std::FILE* out);

// Failed plus mismatched requests (what makes the exit code non-zero).
int ProblemCount(const nlohmann::json& report);

}  // namespace llmbench
