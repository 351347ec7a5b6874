// The three prefill policies (rules in prefill_policy.h).
#include "scheduler/prefill_policy.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace llmserve {
namespace {

class BulkPolicy final : public PrefillPolicy {
 public:
  StepShape Shape(const StepStart&) const override { return StepShape::kDecodeThenPrefill; }
  PrefillBudget Budget(const StepState& s) const override { return {s.room, PrefillBudget::kUnlimited}; }
  std::string Describe() const override { return "bulk"; }
};

class SeparatePolicy final : public PrefillPolicy {
 public:
  explicit SeparatePolicy(int32_t max_decode_stall) : max_decode_stall_(max_decode_stall) {}
  StepShape Shape(const StepStart& s) const override {
    const bool stalled = s.decode_ready && s.prefill_steps >= max_decode_stall_;
    return s.prompt_work && !stalled ? StepShape::kPrefillOnly : StepShape::kDecodeOnly;
  }
  PrefillBudget Budget(const StepState& s) const override { return {s.room, PrefillBudget::kUnlimited}; }
  std::string Describe() const override {
    return absl::StrFormat("separate (at most %d prefill steps in a row while decodes wait)", max_decode_stall_);
  }

 private:
  const int32_t max_decode_stall_;
};

class PiggybackPolicy final : public PrefillPolicy {
 public:
  PiggybackPolicy(int32_t rows, int32_t horizon) : rows_(rows), horizon_(horizon) {}
  StepShape Shape(const StepStart&) const override { return StepShape::kDecodeThenPrefill; }
  PrefillBudget Budget(const StepState& s) const override {
    // Rows the step can still take before it costs more than a decode step of its own
    // (with nothing decoding: what later steps will have at most).
    const int32_t free_rows = std::min(rows_ - s.decode_rows, s.room);
    const bool piggyback =
        free_rows >= kMinPiggybackRows && s.pending_prompt_tokens <= static_cast<int64_t>(free_rows) * horizon_;
    if (!piggyback) return {s.room, PrefillBudget::kUnlimited};
    if (s.decode_rows == 0) return {s.room, 1};
    return {free_rows, PrefillBudget::kUnlimited};
  }
  std::string Describe() const override {
    return absl::StrFormat("piggyback (decode steps filled to %d rows while the pending prompt tokens fit in %d)",
                           rows_, horizon_);
  }

 private:
  const int32_t rows_;
  const int32_t horizon_;
};

}  // namespace

const char* PrefillPolicyKindName(PrefillPolicyKind k) {
  switch (k) {
    case PrefillPolicyKind::kSeparate: return "separate";
    case PrefillPolicyKind::kPiggyback: return "piggyback";
    case PrefillPolicyKind::kBulk: break;
  }
  return "bulk";
}

absl::Status PrefillPolicyConfig::Validate() const {
  switch (kind) {
    case PrefillPolicyKind::kBulk: return absl::OkStatus();
    case PrefillPolicyKind::kSeparate:
      if (max_decode_stall < 1) return absl::InvalidArgumentError("max_decode_stall must be >= 1");
      return absl::OkStatus();
    case PrefillPolicyKind::kPiggyback:
      if (rows < 1) return absl::InvalidArgumentError("piggyback rows must be >= 1");
      if (horizon < 1) return absl::InvalidArgumentError("piggyback horizon must be >= 1");
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("prefill policy kind must be bulk, separate or piggyback");
}

std::unique_ptr<const PrefillPolicy> MakePrefillPolicy(const PrefillPolicyConfig& config) {
  switch (config.kind) {
    case PrefillPolicyKind::kSeparate: return std::make_unique<SeparatePolicy>(config.max_decode_stall);
    case PrefillPolicyKind::kPiggyback: return std::make_unique<PiggybackPolicy>(config.rows, config.horizon);
    case PrefillPolicyKind::kBulk: break;
  }
  return std::make_unique<BulkPolicy>();
}

}  // namespace llmserve
