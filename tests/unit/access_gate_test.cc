// AccessGate: every surface in every phase, with no key, a wrong key and the key, with and
// without keys configured; the refusals' codes and words, and that exactly the
// UNAUTHENTICATED ones are counted.
#include "server/access_gate.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "tests/util/prom_text.h"

namespace llmserve {
namespace {

constexpr std::string_view kKey = "Bearer first-key-0123456789";
constexpr std::string_view kWrong = "Bearer wrong-key-0123456789";

constexpr AccessSurface kSurfaces[] = {AccessSurface::kGrpcApi, AccessSurface::kHttpApi, AccessSurface::kReflection,
                                       AccessSurface::kHealth, AccessSurface::kMetrics};
constexpr ServingPhase kPhases[] = {ServingPhase::kLoading, ServingPhase::kServing, ServingPhase::kDraining,
                                    ServingPhase::kRefusing};

const char* Name(AccessSurface s) {
  switch (s) {
    case AccessSurface::kGrpcApi: return "grpc";
    case AccessSurface::kHttpApi: return "http";
    case AccessSurface::kReflection: return "reflection";
    case AccessSurface::kHealth: return "health";
    case AccessSurface::kMetrics: return "metrics";
  }
  return "?";
}

class AccessGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto metrics = Metrics::Create(registry_, "llmserve_", "demo", MetricsConfigInfo{});
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    metrics_ = *std::move(metrics);
  }
  // A gate with the key of kKey (or none), counting in metrics_.
  std::unique_ptr<AccessGate> Gate(bool with_keys, bool reflection_needs_key = true) {
    std::optional<ApiKeys> keys;
    if (with_keys) {
      absl::StatusOr<ApiKeys> parsed = ApiKeys::Parse("first-key-0123456789\n", "test");
      EXPECT_TRUE(parsed.ok()) << parsed.status();
      if (parsed.ok()) keys = *std::move(parsed);
    }
    return std::make_unique<AccessGate>(std::make_shared<ApiKeyStore>(std::move(keys)), metrics_.get(),
                                        reflection_needs_key);
  }
  double Unauthenticated() {
    const std::string text = prometheus::TextSerializer().Serialize(registry_.Collect());
    return ::llmserve::testing::FindSample(::llmserve::testing::ParsePromText(text),
                                           "llmserve_unauthenticated_requests_total", {{"model_name", "demo"}})
        .value_or(-1);
  }

  prometheus::Registry registry_;
  std::unique_ptr<Metrics> metrics_;
};

// What the gate must answer once the key question is settled: the phase's verdict.
absl::StatusCode PhaseVerdict(AccessSurface s, ServingPhase p) {
  if (s != AccessSurface::kGrpcApi && s != AccessSurface::kHttpApi) return absl::StatusCode::kOk;
  if (p == ServingPhase::kLoading) return absl::StatusCode::kUnavailable;
  if (s == AccessSurface::kHttpApi && p == ServingPhase::kRefusing) return absl::StatusCode::kUnavailable;
  return absl::StatusCode::kOk;
}

TEST_F(AccessGateTest, EverySurfaceInEveryPhaseWithNoWrongAndTheKey) {
  auto gate = Gate(true);
  EXPECT_TRUE(gate->keys_enabled());
  EXPECT_EQ(gate->phase(), ServingPhase::kLoading);
  const std::vector<std::string_view> none;
  const std::vector<std::string_view> wrong = {kWrong};
  const std::vector<std::string_view> key = {kKey};
  double refused = 0;
  for (ServingPhase phase : kPhases) {
    gate->SetPhase(phase);
    EXPECT_EQ(gate->phase(), phase);
    for (AccessSurface surface : kSurfaces) {
      SCOPED_TRACE(absl::StrCat(Name(surface), " in phase ", static_cast<int>(phase)));
      const bool needs_key = surface == AccessSurface::kGrpcApi || surface == AccessSurface::kHttpApi ||
                             surface == AccessSurface::kReflection;
      const absl::Status no_key = gate->Admit(surface, none);
      const absl::Status bad_key = gate->Admit(surface, wrong);
      if (needs_key) {
        refused += 2;
        EXPECT_EQ(no_key.code(), absl::StatusCode::kUnauthenticated) << no_key;
        EXPECT_EQ(bad_key.code(), absl::StatusCode::kUnauthenticated) << bad_key;
        EXPECT_EQ(bad_key.message(), "the API key is not valid");
        EXPECT_EQ(bad_key.message().find("wrong-key"), std::string::npos) << "the key must not be echoed";
      } else {
        EXPECT_EQ(no_key.code(), PhaseVerdict(surface, phase)) << no_key;
        EXPECT_EQ(bad_key.code(), PhaseVerdict(surface, phase)) << bad_key;
      }
      const absl::Status with_key = gate->Admit(surface, key);
      EXPECT_EQ(with_key.code(), PhaseVerdict(surface, phase)) << with_key;
      EXPECT_EQ(Unauthenticated(), refused);
    }
  }
  EXPECT_EQ(refused, 24);  // 3 surfaces need a key, 4 phases, 2 refusals each
}

TEST_F(AccessGateTest, NoKeyMessagesUseTheSurfacesWords) {
  auto gate = Gate(true);
  gate->SetPhase(ServingPhase::kServing);
  EXPECT_EQ(gate->Admit(AccessSurface::kHttpApi, {}).message(),
            "no API key: send the header 'Authorization: Bearer <key>'");
  EXPECT_EQ(gate->Admit(AccessSurface::kGrpcApi, {}).message(),
            "no API key: send metadata 'authorization: Bearer <key>'");
  EXPECT_EQ(gate->Admit(AccessSurface::kReflection, {}).message(),
            "no API key: send metadata 'authorization: Bearer <key>'");
}

TEST_F(AccessGateTest, PhaseRefusalsSayWhy) {
  auto gate = Gate(false);
  const std::vector<std::string_view> none;
  const absl::Status loading = gate->Admit(AccessSurface::kGrpcApi, none);
  EXPECT_EQ(loading.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(loading.message(), "model loading: try again shortly");
  EXPECT_EQ(gate->Admit(AccessSurface::kHttpApi, none).message(), "model loading: try again shortly");
  gate->SetPhase(ServingPhase::kRefusing);
  const absl::Status refusing = gate->Admit(AccessSurface::kHttpApi, none);
  EXPECT_EQ(refusing.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(refusing.message(), "draining: the server is shutting down, retry elsewhere");
  EXPECT_TRUE(gate->Admit(AccessSurface::kGrpcApi, none).ok()) << "gRPC drains at the transport";
}

TEST_F(AccessGateTest, WithoutKeysOnlyThePhaseDecides) {
  auto gate = Gate(false);
  EXPECT_FALSE(gate->keys_enabled());
  const std::vector<std::string_view> junk = {kWrong};
  for (ServingPhase phase : kPhases) {
    gate->SetPhase(phase);
    for (AccessSurface surface : kSurfaces) {
      SCOPED_TRACE(absl::StrCat(Name(surface), " in phase ", static_cast<int>(phase)));
      EXPECT_EQ(gate->Admit(surface, {}).code(), PhaseVerdict(surface, phase));
      EXPECT_EQ(gate->Admit(surface, junk).code(), PhaseVerdict(surface, phase));
    }
  }
  EXPECT_EQ(Unauthenticated(), 0);
  // Replacing keys where none were configured does not turn them on.
  absl::StatusOr<ApiKeys> keys = ApiKeys::Parse("first-key-0123456789\n", "test");
  ASSERT_TRUE(keys.ok());
  gate->ReplaceApiKeys(*std::move(keys));
  EXPECT_FALSE(gate->keys_enabled());
  EXPECT_TRUE(gate->Admit(AccessSurface::kGrpcApi, {}).ok());
}

TEST_F(AccessGateTest, OpenReflectionNeedsNoKeyButTheApiStillDoes) {
  auto gate = Gate(true, /*reflection_needs_key=*/false);
  gate->SetPhase(ServingPhase::kServing);
  EXPECT_TRUE(gate->Admit(AccessSurface::kReflection, {}).ok());
  const std::vector<std::string_view> wrong = {kWrong};
  EXPECT_TRUE(gate->Admit(AccessSurface::kReflection, wrong).ok());
  EXPECT_EQ(gate->Admit(AccessSurface::kGrpcApi, {}).code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(Unauthenticated(), 1);
}

TEST_F(AccessGateTest, AnyOneOfSeveralValuesMayHoldTheKey) {
  auto gate = Gate(true);
  gate->SetPhase(ServingPhase::kServing);
  const std::vector<std::string_view> both = {kWrong, "bearer first-key-0123456789"};
  EXPECT_TRUE(gate->Admit(AccessSurface::kGrpcApi, both).ok());
  const std::vector<std::string_view> no_scheme = {"first-key-0123456789", "Basic first-key-0123456789"};
  EXPECT_EQ(gate->Admit(AccessSurface::kHttpApi, no_scheme).message(), "the API key is not valid");
}

TEST_F(AccessGateTest, ReplacedKeysApplyToTheNextCheck) {
  auto gate = Gate(true);
  gate->SetPhase(ServingPhase::kServing);
  absl::StatusOr<ApiKeys> rotated = ApiKeys::Parse("second-key-0123456789\n", "test");
  ASSERT_TRUE(rotated.ok());
  gate->ReplaceApiKeys(*std::move(rotated));
  const std::vector<std::string_view> old_key = {kKey};
  const std::vector<std::string_view> new_key = {"Bearer second-key-0123456789"};
  EXPECT_EQ(gate->Admit(AccessSurface::kHttpApi, old_key).code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(gate->Admit(AccessSurface::kHttpApi, new_key).ok());
}

TEST_F(AccessGateTest, HealthFollowsThePhase) {
  auto gate = Gate(true);
  EXPECT_EQ(gate->Health().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(gate->Health().message(), "model loading");
  gate->SetPhase(ServingPhase::kServing);
  EXPECT_TRUE(gate->Health().ok());
  for (ServingPhase phase : {ServingPhase::kDraining, ServingPhase::kRefusing}) {
    gate->SetPhase(phase);
    EXPECT_EQ(gate->Health().code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(gate->Health().message(), "draining: shutting down");
  }
}

TEST_F(AccessGateTest, NullKeysMeanNoKeysAndNullMetricsAreFine) {
  AccessGate gate(nullptr, nullptr, true);
  EXPECT_FALSE(gate.keys_enabled());
  gate.SetPhase(ServingPhase::kServing);
  EXPECT_TRUE(gate.Admit(AccessSurface::kReflection, {}).ok());
  absl::StatusOr<ApiKeys> keys = ApiKeys::Parse("first-key-0123456789\n", "test");
  ASSERT_TRUE(keys.ok());
  AccessGate keyed(std::make_shared<ApiKeyStore>(*std::move(keys)), nullptr, true);
  EXPECT_EQ(keyed.Admit(AccessSurface::kGrpcApi, {}).code(), absl::StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace llmserve
