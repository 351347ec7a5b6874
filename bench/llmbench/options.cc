#include "bench/llmbench/options.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace llmbench {

std::optional<LengthDist> ParseLengthDist(const std::string& name) {
  if (name == "fixed") return LengthDist::kFixed;
  if (name == "uniform") return LengthDist::kUniform;
  if (name == "exponential") return LengthDist::kExponential;
  return std::nullopt;
}

const char* LengthDistName(LengthDist dist) {
  switch (dist) {
    case LengthDist::kFixed:
      return "fixed";
    case LengthDist::kUniform:
      return "uniform";
    case LengthDist::kExponential:
      return "exponential";
  }
  return "?";
}

absl::Status BenchOptions::Validate() const {
  if (backend != "grpc" && backend != "openai") {
    return absl::InvalidArgumentError("--backend must be grpc or openai");
  }
  if (!json_schema_file.empty() + !regex.empty() + !grammar_file.empty() > 1) {
    return absl::InvalidArgumentError("give at most one of --json-schema, --regex, --grammar");
  }
  if (ban_first >= 0 && backend == "grpc") {
    return absl::InvalidArgumentError("--ban-ids is only sent over HTTP (--backend openai)");
  }
  auto bad = [](const char* flag, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
  };
  if (addr.empty()) return bad("addr", "must be HOST:PORT");
  if (channels < 1 || channels > 64) return bad("channels", "must be in [1, 64]");
  if (requests < 1) return bad("requests", "must be >= 1");
  if (warmup_requests < 0) return bad("warmup-requests", "must be >= 0");
  if (concurrency < 0) return bad("concurrency", "must be >= 0");
  if (closed_loop() && concurrency < 1) return bad("concurrency", "must be >= 1 without --rate (closed loop)");
  if (!std::isfinite(rate) || rate < 0) return bad("rate", "must be a number >= 0 (0 = closed loop)");
  if (input_len < 1) return bad("input-len", "must be >= 1");
  if (output_len < 1) return bad("output-len", "must be >= 1");
  if (!(range_ratio > 0 && range_ratio < 1)) return bad("range-ratio", "must be in (0, 1)");
  if (absl::Status s = ValidatePrefixAndTurns(); !s.ok()) return s;
  if (token_offset < 0) return bad("token-offset", "must be >= 0");
  if (vocab < 0) return bad("vocab", "must be >= 0");
  if (vocab > 0 && vocab <= token_offset) return bad("vocab", "must be > --token-offset");
  if (temperature && !(*temperature >= 0 && *temperature <= 100)) return bad("temperature", "must be in [0, 100]");
  if (top_k && *top_k < 0) return bad("top-k", "must be >= 0");
  if (top_p && !(*top_p > 0 && *top_p <= 1)) return bad("top-p", "must be in (0, 1]");
  if (!std::isfinite(timeout_seconds) || timeout_seconds < 0) return bad("timeout", "must be seconds >= 0");
  if (!(progress_interval > 0)) return bad("progress-interval", "must be > 0");
  return absl::OkStatus();
}

absl::Status BenchOptions::ValidatePrefixAndTurns() const {
  auto bad = [](const char* flag, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
  };
  if (shared_prefix_len < 0) return bad("shared-prefix-len", "must be >= 0");
  // Text prompts are tokenized by the server, so llmbench cannot prepend ids to them.
  if (shared_prefix_len > 0 && !prompts_file.empty()) {
    return bad("shared-prefix-len", "needs random-token prompts (drop --prompts-file)");
  }
  if (turns < 1) return bad("turns", "must be >= 1");
  if (turns > 1) {
    // Later turns are built from earlier turns' output ids, and start when they end.
    if (!prompts_file.empty()) return bad("turns", "needs random-token prompts (drop --prompts-file)");
    if (!closed_loop()) return bad("turns", "is closed loop only (drop --rate)");
    // Fixed lengths make the context check exact (CheckContext).
    if (len_dist != LengthDist::kFixed) return bad("turns", "uses fixed lengths (drop --len-dist)");
  }
  if (cache_salt.size() > 256) return bad("cache-salt", "must be at most 256 bytes");
  if (llamacpp_cache_prompt && backend == "grpc") {
    return bad("llamacpp-cache-prompt", "is only sent over HTTP (--backend openai)");
  }
  return absl::OkStatus();
}

}  // namespace llmbench
