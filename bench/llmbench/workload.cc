#include "bench/llmbench/workload.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tools/prompts_file.h"

namespace llmbench {

namespace v1 = llmserve::v1;

std::vector<int> SampleLengths(int n, int mean, LengthDist dist, double range_ratio, std::mt19937_64* rng) {
  std::vector<int> out(static_cast<size_t>(std::max(n, 0)), std::max(mean, 1));
  if (dist == LengthDist::kUniform) {
    const int lo = std::max(1, static_cast<int>(std::ceil(mean * (1 - range_ratio))));
    const int hi = std::max(lo, static_cast<int>(std::floor(mean * (1 + range_ratio))));
    std::uniform_int_distribution<int> u(lo, hi);
    for (int& x : out) x = u(*rng);
  } else if (dist == LengthDist::kExponential) {
    std::exponential_distribution<double> e(1.0 / std::max(mean, 1));
    const double cap = 10.0 * std::max(mean, 1);
    for (int& x : out) x = static_cast<int>(std::clamp(std::round(e(*rng)), 1.0, cap));
  }
  return out;
}

std::vector<int32_t> RandomPrompt(int len, int lo, const ModelLimits& limits, std::mt19937_64* rng) {
  std::uniform_int_distribution<int32_t> u(lo, limits.vocab - 1);
  std::vector<int32_t> ids;
  ids.reserve(static_cast<size_t>(len));
  while (static_cast<int>(ids.size()) < len) {
    const int32_t id = u(*rng);
    if (id != limits.bos_id && id != limits.eos_id) ids.push_back(id);
  }
  return ids;
}

std::vector<double> PoissonArrivals(int n, double rate, std::mt19937_64* rng) {
  std::vector<double> out(static_cast<size_t>(std::max(n, 0)), 0.0);
  if (rate <= 0) return out;
  std::exponential_distribution<double> gap(rate);
  for (size_t i = 1; i < out.size(); ++i) out[i] = out[i - 1] + gap(*rng);
  return out;
}

absl::StatusOr<std::vector<std::string>> ReadPromptsFile(const std::string& path) {
  auto prompts = llmserve::ReadPromptsFile(path);
  if (!prompts.ok()) return prompts.status();
  for (const std::string& p : *prompts) {
    if (p.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": empty prompt (llmbench needs text)"));
  }
  if (prompts->empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no prompts"));
  return prompts;
}

absl::Status CheckContext(const BenchOptions& o, const ModelLimits& limits) {
  const int ctx = limits.context_length;
  if (ctx <= 1 || !o.prompts_file.empty()) return absl::OkStatus();
  if (o.turns > 1) {
    const int64_t need = o.shared_prefix_len + static_cast<int64_t>(o.turns) * (o.input_len + o.output_len);
    if (need > ctx) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a conversation needs ", need, " tokens (--shared-prefix-len ", o.shared_prefix_len, " + --turns ", o.turns,
          " x (--input-len ", o.input_len, " + --output-len ", o.output_len, ")) but the model's context is ", ctx,
          "; lower --turns, --input-len, --output-len or --shared-prefix-len"));
    }
  } else if (o.shared_prefix_len + 2 > ctx) {
    return absl::InvalidArgumentError(absl::StrCat("--shared-prefix-len ", o.shared_prefix_len,
                                                   " leaves no room for a prompt and output in the model's context of ",
                                                   ctx, "; lower --shared-prefix-len"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::GenerateRequest>> BuildRequests(const BenchOptions& options, const ModelLimits& limits,
                                                               const std::vector<std::string>& prompts,
                                                               std::mt19937_64* rng) {
  const bool random_tokens = prompts.empty();
  if (random_tokens && limits.vocab <= options.token_offset + 2) {
    return absl::InvalidArgumentError(absl::StrCat("random-token prompts need a vocabulary larger than --token-offset (",
                                                   options.token_offset, "); vocab is ", limits.vocab));
  }
  if (absl::Status s = CheckContext(options, limits); !s.ok()) return s;
  const int turns = std::max(options.turns, 1);
  const int n = options.requests * turns;
  const std::vector<int> in_lens = SampleLengths(n, options.input_len, options.len_dist, options.range_ratio, rng);
  const std::vector<int> out_lens = SampleLengths(n, options.output_len, options.len_dist, options.range_ratio, rng);
  // Drawn once (after the lengths, so a run without a prefix draws what it always did).
  const std::vector<int32_t> prefix =
      random_tokens ? RandomPrompt(options.shared_prefix_len, options.token_offset, limits, rng)
                    : std::vector<int32_t>();
  const int prefix_len = static_cast<int>(prefix.size());
  v1::OutputConstraint constraint;
  auto read = [](const std::string& path, std::string* out) -> absl::Status {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
    std::stringstream s;
    s << in.rdbuf();
    *out = s.str();
    return absl::OkStatus();
  };
  if (!options.json_schema_file.empty()) {
    if (absl::Status s = read(options.json_schema_file, constraint.mutable_json_schema()); !s.ok()) return s;
  } else if (!options.grammar_file.empty()) {
    if (absl::Status s = read(options.grammar_file, constraint.mutable_grammar()); !s.ok()) return s;
  } else if (!options.regex.empty()) {
    constraint.set_regex(options.regex);
  }
  const bool constrained = constraint.kind_case() != v1::OutputConstraint::KIND_NOT_SET;
  std::vector<v1::GenerateRequest> requests(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    v1::GenerateRequest& r = requests[static_cast<size_t>(i)];
    const int turn = i % turns;
    r.set_request_id(turns == 1 ? absl::StrCat("llmbench-", i) : absl::StrCat("llmbench-", i / turns, "-", turn));
    int in_len = in_lens[static_cast<size_t>(i)];
    int out_len = out_lens[static_cast<size_t>(i)];
    const int ctx = limits.context_length;
    if (random_tokens) {
      // Multi-turn conversations fit whole (CheckContext); one turn is clamped here.
      if (ctx > 1 && turns == 1) {
        in_len = std::min(in_len, ctx - 1 - prefix_len);
        out_len = std::min(out_len, ctx - prefix_len - in_len);
      }
      auto* ids = r.mutable_tokens()->mutable_ids();
      if (turn == 0) ids->Assign(prefix.begin(), prefix.end());
      const std::vector<int32_t> own = RandomPrompt(in_len, options.token_offset, limits, rng);
      ids->Add(own.begin(), own.end());
    } else {
      if (ctx > 1) out_len = std::min(out_len, ctx - 1);
      r.set_text(prompts[static_cast<size_t>(i) % prompts.size()]);
    }
    r.set_max_tokens(out_len);
    r.set_ignore_eos(options.ignore_eos);
    if (options.temperature) r.set_temperature(*options.temperature);
    if (options.top_k) r.set_top_k(*options.top_k);
    if (options.top_p) r.set_top_p(*options.top_p);
    r.set_seed(options.seed + static_cast<uint64_t>(i));
    if (!options.cache_salt.empty()) r.set_cache_salt(options.cache_salt);
    if (constrained) *r.mutable_constraint() = constraint;
  }
  return requests;
}

void ChainTurn(const v1::GenerateRequest& prev, const std::vector<int32_t>& generated, v1::GenerateRequest* next) {
  const auto& own = next->tokens().ids();
  std::vector<int32_t> ids(prev.tokens().ids().begin(), prev.tokens().ids().end());
  ids.insert(ids.end(), generated.begin(), generated.end());
  ids.insert(ids.end(), own.begin(), own.end());
  next->mutable_tokens()->mutable_ids()->Assign(ids.begin(), ids.end());
}

}  // namespace llmbench
