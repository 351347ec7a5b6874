// request_convert, generation_input and proto_wire: a table of invalid GenerateRequests
// (code + message naming the field), valid ones converted with the proto's defaults, the output messages,
// Tokenize/Detokenize answers, and raw parsing of invalid UTF-8 on the wire.
#include "server/request_convert.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/constraint_vocabulary.h"
#include "server/proto_wire.h"
#include "tests/util/fake_engine_model.h"

namespace llmserve {
namespace {

namespace v1 = ::llmserve::v1;

constexpr int32_t kVocab = 64;      // MakeTinyTokenizer's vocabulary
constexpr int32_t kContext = 256;

const Tokenizer& Tiny() {
  static const std::unique_ptr<Tokenizer> tok = testing::MakeTinyTokenizer();
  return *tok;
}

RequestLimits Limits(int32_t context = kContext) {
  RequestLimits l;
  l.vocab_size = kVocab;
  l.max_context = context;
  return l;
}

v1::GenerateRequest TextRequest(const std::string& text) {
  v1::GenerateRequest r;
  r.set_text(text);
  return r;
}

v1::GenerateRequest TokenRequest(int n, int32_t first = 3) {
  v1::GenerateRequest r;
  for (int i = 0; i < n; ++i) r.mutable_tokens()->add_ids(first + i % (kVocab - first));
  return r;
}

// The gRPC path (as GenerateReactor): the message with the gRPC names, then the one validation.
absl::StatusOr<EngineRequest> Convert(const v1::GenerateRequest& r, const Tokenizer& tok, const RequestLimits& limits,
                                      std::string_view fallback_id) {
  return ToEngineRequest(FromGenerateRequest(r), tok, limits, fallback_id);
}

// Appends a stop string (add_stop(const char*) trips GCC 12's -Wrestrict false positive).
void AddStop(v1::GenerateRequest& r, std::string s) { *r.add_stop() = std::move(s); }

struct InvalidCase {
  const char* name;
  std::function<void(v1::GenerateRequest&)> edit;  // applied to TextRequest("the cat")
  const char* message;                              // substring of the INVALID_ARGUMENT message
};

class InvalidRequestTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidRequestTest, RefusedNamingTheField) {
  v1::GenerateRequest r = TextRequest("the cat");
  GetParam().edit(r);
  absl::StatusOr<EngineRequest> got = Convert(r, Tiny(), Limits(), "req-1");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
  EXPECT_NE(got.status().message().find(GetParam().message), absl::string_view::npos) << got.status();
}

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

INSTANTIATE_TEST_SUITE_P(
    Table, InvalidRequestTest,
    ::testing::Values(
        InvalidCase{"no_input", [](v1::GenerateRequest& r) { r.clear_input(); }, "input is required: set text, tokens or chat"},
        InvalidCase{"empty_text", [](v1::GenerateRequest& r) { r.set_text(""); }, "text must be non-empty"},
        InvalidCase{"bad_utf8_text", [](v1::GenerateRequest& r) { r.set_text("ab\xC3"); }, "text must be valid UTF-8"},
        InvalidCase{"empty_tokens", [](v1::GenerateRequest& r) { r.mutable_tokens(); }, "tokens.ids must be non-empty"},
        InvalidCase{"token_too_big", [](v1::GenerateRequest& r) { r = TokenRequest(3); r.mutable_tokens()->add_ids(64); },
                    "tokens.ids[3] must be in [0, 64), got 64"},
        InvalidCase{"token_negative", [](v1::GenerateRequest& r) { r.mutable_tokens()->add_ids(-1); },
                    "tokens.ids[0] must be in [0, 64), got -1"},
        InvalidCase{"temperature_negative", [](v1::GenerateRequest& r) { r.set_temperature(-0.5f); },
                    "temperature must be in [0, 100] (0 = greedy), got -0.5"},
        InvalidCase{"temperature_too_big", [](v1::GenerateRequest& r) { r.set_temperature(101.0f); },
                    "temperature must be in [0, 100]"},
        InvalidCase{"temperature_nan", [](v1::GenerateRequest& r) { r.set_temperature(kNan); }, "temperature must be"},
        InvalidCase{"top_k_negative", [](v1::GenerateRequest& r) { r.set_top_k(-1); }, "top_k must be >= 0"},
        InvalidCase{"top_p_zero", [](v1::GenerateRequest& r) { r.set_top_p(0.0f); }, "top_p must be in (0, 1], got 0"},
        InvalidCase{"top_p_big", [](v1::GenerateRequest& r) { r.set_top_p(1.5f); }, "top_p must be in (0, 1], got 1.5"},
        InvalidCase{"min_p_big", [](v1::GenerateRequest& r) { r.set_min_p(1.5f); }, "min_p must be in [0, 1]"},
        InvalidCase{"repetition_zero", [](v1::GenerateRequest& r) { r.set_repetition_penalty(0.0f); },
                    "repetition_penalty must be"},
        InvalidCase{"presence_big", [](v1::GenerateRequest& r) { r.set_presence_penalty(2.5f); },
                    "presence_penalty must be in [-2, 2]"},
        InvalidCase{"frequency_small", [](v1::GenerateRequest& r) { r.set_frequency_penalty(-3.0f); },
                    "frequency_penalty must be in [-2, 2]"},
        InvalidCase{"logprobs_big", [](v1::GenerateRequest& r) { r.set_logprobs(21); }, "logprobs must be in [0, 20], got 21"},
        InvalidCase{"logprobs_negative", [](v1::GenerateRequest& r) { r.set_logprobs(-1); }, "logprobs must be in [0, 20]"},
        InvalidCase{"max_tokens_zero", [](v1::GenerateRequest& r) { r.set_max_tokens(0); }, "max_tokens must be >= 1, got 0"},
        InvalidCase{"beyond_context", [](v1::GenerateRequest& r) { r = TokenRequest(10); r.set_max_tokens(250); },
                    "prompt (10 tokens) + max_tokens (250) = 260 exceeds the context length (256)"},
        InvalidCase{"prompt_fills_context", [](v1::GenerateRequest& r) { r = TokenRequest(256); },
                    "prompt (256 tokens) leaves no room to generate in the context length (256)"},
        InvalidCase{"too_many_stops", [](v1::GenerateRequest& r) { for (int i = 0; i < 17; ++i) AddStop(r, "x"); },
                    "stop must have at most 16 strings, got 17"},
        InvalidCase{"empty_stop", [](v1::GenerateRequest& r) { AddStop(r, "a"); AddStop(r, ""); }, "stop[1] must be non-empty"},
        InvalidCase{"long_stop", [](v1::GenerateRequest& r) { AddStop(r, std::string(257, 'a')); },
                    "stop[0] must be at most 256 bytes, got 257"},
        InvalidCase{"bad_utf8_stop", [](v1::GenerateRequest& r) { AddStop(r, "\xFF"); }, "stop[0] must be valid UTF-8"},
        InvalidCase{"stop_token_big", [](v1::GenerateRequest& r) { r.add_stop_token_ids(5); r.add_stop_token_ids(64); },
                    "stop_token_ids[1] must be in [0, 64), got 64"},
        InvalidCase{"stop_token_negative", [](v1::GenerateRequest& r) { r.add_stop_token_ids(-2); },
                    "stop_token_ids[0] must be in [0, 64), got -2"},
        InvalidCase{"request_id_long", [](v1::GenerateRequest& r) { r.set_request_id(std::string(129, 'r')); },
                    "request_id must be at most 128 bytes, got 129"}),
    [](const ::testing::TestParamInfo<InvalidCase>& info) { return std::string(info.param.name); });

TEST(RequestConvertTest, DefaultsFollowTheProto) {
  absl::StatusOr<EngineRequest> got = Convert(TextRequest("the cat sat"), Tiny(), Limits(1024), "req-7");
  ASSERT_TRUE(got.ok()) << got.status();
  auto want_ids = Tiny().Encode("the cat sat", EncodeOptions{.add_bos = Tiny().add_bos_default()});
  ASSERT_TRUE(want_ids.ok());
  EXPECT_EQ(got->prompt, *want_ids);
  EXPECT_EQ(got->request_id, "req-7");
  EXPECT_EQ(got->sampling.temperature, 1.0f);
  EXPECT_EQ(got->sampling.top_k, 0);
  EXPECT_EQ(got->sampling.top_p, 1.0f);
  EXPECT_EQ(got->sampling.min_p, 0.0f);
  EXPECT_EQ(got->sampling.repetition_penalty, 1.0f);
  EXPECT_EQ(got->sampling.presence_penalty, 0.0f);
  EXPECT_EQ(got->sampling.frequency_penalty, 0.0f);
  EXPECT_FALSE(got->sampling.seed.has_value());
  EXPECT_FALSE(got->sampling.want_logprobs);
  EXPECT_EQ(got->stop.max_tokens, 256);
  EXPECT_FALSE(got->stop.ignore_eos);
  EXPECT_TRUE(got->stop.stop_strings.empty());
  EXPECT_TRUE(got->stop.stop_token_ids.empty());
  EXPECT_EQ(got->deadline, absl::InfiniteFuture());
}

TEST(RequestConvertTest, TheModelsSamplingDefaultsFillOnlyUnsetFields) {
  GenerationDefaults shipped;  // e.g. Qwen2.5 Instruct's generation_config.json
  shipped.temperature = 0.7f;
  shipped.top_p = 0.8f;
  shipped.top_k = 20;
  shipped.repetition_penalty = 1.05f;
  RequestLimits limits = Limits(1024);
  limits.sampling_defaults = DefaultSamplingParams(shipped);
  absl::StatusOr<EngineRequest> unset = Convert(TextRequest("the cat"), Tiny(), limits, "a");
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_FLOAT_EQ(unset->sampling.temperature, 0.7f);
  EXPECT_FLOAT_EQ(unset->sampling.top_p, 0.8f);
  EXPECT_EQ(unset->sampling.top_k, 20);
  EXPECT_FLOAT_EQ(unset->sampling.repetition_penalty, 1.05f);
  EXPECT_EQ(unset->sampling.min_p, 0.0f);  // not shipped: the API's default
  v1::GenerateRequest r = TextRequest("the cat");
  r.set_temperature(0.0f);  // set, even to a zero value: the request's
  r.set_top_k(0);
  absl::StatusOr<EngineRequest> set = Convert(r, Tiny(), limits, "b");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->sampling.temperature, 0.0f);
  EXPECT_EQ(set->sampling.top_k, 0);
  EXPECT_FLOAT_EQ(set->sampling.top_p, 0.8f);
}

TEST(RequestConvertTest, EveryFieldIsCarried) {
  v1::GenerateRequest r = TextRequest("the dog ran");
  r.set_request_id("mine");
  r.set_temperature(0.7f);
  r.set_top_k(5);
  r.set_top_p(0.9f);
  r.set_min_p(0.05f);
  r.set_repetition_penalty(1.1f);
  r.set_presence_penalty(0.5f);
  r.set_frequency_penalty(-0.5f);
  r.set_seed(12345);
  r.set_max_tokens(17);
  AddStop(r, "cat");
  AddStop(r, "é");
  r.add_stop_token_ids(7);
  r.set_ignore_eos(true);
  r.set_logprobs(3);
  r.set_cache_salt("tenant");
  (*r.mutable_logit_bias())[9] = 2.5f;
  (*r.mutable_logit_bias())[4] = -1.0f;
  absl::StatusOr<EngineRequest> got = Convert(r, Tiny(), Limits(), "req-1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->request_id, "mine");
  EXPECT_EQ(got->cache_salt, "tenant");
  EXPECT_EQ(got->sampling.logit_bias, (std::vector<std::pair<int32_t, float>>{{4, -1.0f}, {9, 2.5f}}));
  EXPECT_EQ(got->sampling.temperature, 0.7f);
  EXPECT_EQ(got->sampling.top_k, 5);
  EXPECT_EQ(got->sampling.top_p, 0.9f);
  EXPECT_EQ(got->sampling.min_p, 0.05f);
  EXPECT_EQ(got->sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(got->sampling.presence_penalty, 0.5f);
  EXPECT_EQ(got->sampling.frequency_penalty, -0.5f);
  EXPECT_EQ(got->sampling.seed, std::optional<uint64_t>(12345));
  EXPECT_TRUE(got->sampling.want_logprobs);
  EXPECT_EQ(got->sampling.logprobs, 3);
  EXPECT_EQ(got->stop.max_tokens, 17);
  EXPECT_EQ(got->stop.stop_strings, (std::vector<std::string>{"cat", "é"}));
  EXPECT_EQ(got->stop.stop_token_ids, std::vector<int32_t>{7});
  EXPECT_TRUE(got->stop.ignore_eos);
}

TEST(RequestConvertTest, AddBosAndTokenInput) {
  const int32_t bos = Tiny().bos_id();
  ASSERT_GE(bos, 0);
  v1::GenerateRequest r = TextRequest("the cat");
  r.set_add_bos(true);
  auto with = Convert(r, Tiny(), Limits(), "x");
  r.set_add_bos(false);
  auto without = Convert(r, Tiny(), Limits(), "x");
  ASSERT_TRUE(with.ok() && without.ok());
  ASSERT_FALSE(without->prompt.empty());
  EXPECT_EQ(with->prompt.front(), bos);
  EXPECT_NE(without->prompt.front(), bos);
  EXPECT_EQ(with->prompt.size(), without->prompt.size() + 1);

  v1::GenerateRequest t = TokenRequest(5, 10);
  t.set_add_bos(true);  // ignored for token prompts
  auto tok = Convert(t, Tiny(), Limits(), "x");
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_EQ(tok->prompt, (std::vector<int32_t>{10, 11, 12, 13, 14}));
}

TEST(RequestConvertTest, MaxTokensAgainstTheContext) {
  // Unset: 256, or what the context leaves.
  auto a = Convert(TokenRequest(200), Tiny(), Limits(), "x");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->stop.max_tokens, 56);
  auto b = Convert(TokenRequest(255), Tiny(), Limits(), "x");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->stop.max_tokens, 1);
  // Set: exactly filling the context is fine, one more is not.
  v1::GenerateRequest r = TokenRequest(6);
  r.set_max_tokens(250);
  EXPECT_TRUE(Convert(r, Tiny(), Limits(), "x").ok());
  r.set_max_tokens(251);
  EXPECT_EQ(Convert(r, Tiny(), Limits(), "x").status().code(), absl::StatusCode::kInvalidArgument);
  // logprobs = 0: the chosen token's logprob only.
  v1::GenerateRequest l = TokenRequest(3);
  l.set_logprobs(0);
  auto lp = Convert(l, Tiny(), Limits(), "x");
  ASSERT_TRUE(lp.ok());
  EXPECT_TRUE(lp->sampling.want_logprobs);
  EXPECT_EQ(lp->sampling.logprobs, 0);
}

TEST(RequestConvertTest, PromptBytesAreBoundedBeforeTokenizing) {
  EXPECT_EQ(DefaultMaxPromptBytes(512), 16384);
  EXPECT_EQ(DefaultMaxPromptBytes(16), kMinPromptBytes);  // a tiny context still takes a sentence
  RequestLimits limits = Limits();
  limits.max_prompt_bytes = 10;
  EXPECT_TRUE(Convert(TextRequest("the cat"), Tiny(), limits, "x").ok());
  const absl::StatusOr<EngineRequest> over = Convert(TextRequest("the cat sat"), Tiny(), limits, "x");
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(over.status().message(), "text must be at most 10 bytes (the server's --max-prompt-bytes), got 11");
  // Invalid UTF-8 beyond the bound gets the bound's message: the size is checked first.
  EXPECT_NE(Convert(TextRequest(std::string(11, '\xff')), Tiny(), limits, "x").status().message().find(
                "at most 10 bytes"),
            std::string::npos);
  // Token ids are bounded by the context, not by bytes.
  EXPECT_TRUE(Convert(TokenRequest(40), Tiny(), limits, "x").ok());

  v1::TokenizeRequest t;
  t.set_text("the cat sat");
  v1::TokenizeResponse resp;
  const absl::Status s = FillTokenize(t, Tiny(), 10, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "text must be at most 10 bytes (the server's --max-prompt-bytes), got 11");
  EXPECT_EQ(resp.ids_size(), 0);
  EXPECT_TRUE(FillTokenize(t, Tiny(), 11, &resp).ok());
  EXPECT_GT(resp.ids_size(), 0);
}

TEST(RequestConvertTest, FinishReasons) {
  const std::vector<std::pair<SequenceState, v1::FinishReason>> table = {
      {SequenceState::kFinishedEos, v1::FINISH_REASON_EOS},
      {SequenceState::kFinishedStopString, v1::FINISH_REASON_STOP_SEQUENCE},
      {SequenceState::kFinishedStopToken, v1::FINISH_REASON_STOP_TOKEN},
      {SequenceState::kFinishedLength, v1::FINISH_REASON_LENGTH},
      {SequenceState::kFinishedCancelled, v1::FINISH_REASON_CANCELLED},
      {SequenceState::kFinishedDeadline, v1::FINISH_REASON_DEADLINE},
      {SequenceState::kFinishedError, v1::FINISH_REASON_ERROR},
      {SequenceState::kFinishedConstraint, v1::FINISH_REASON_CONSTRAINT},
      {SequenceState::kRunning, v1::FINISH_REASON_UNSPECIFIED},
      {SequenceState::kWaiting, v1::FINISH_REASON_UNSPECIFIED},
  };
  for (const auto& [state, reason] : table) EXPECT_EQ(ToFinishReason(state), reason) << SequenceStateName(state);
}

// Each OutputConstraint kind becomes its ConstraintSpec, named as the gRPC field.
TEST(RequestConvertTest, ConstraintKindsMapToSpecs) {
  using K = constraint::ConstraintKind;
  v1::GenerateRequest r = TextRequest("the cat");
  EXPECT_FALSE(FromGenerateRequest(r).constraint.has_value());
  r.mutable_constraint()->set_flexible_whitespace(true);  // no kind: unconstrained
  EXPECT_FALSE(FromGenerateRequest(r).constraint.has_value());

  r.mutable_constraint()->set_json_schema(R"({"type":"object"})");
  GenerationInput in = FromGenerateRequest(r);
  ASSERT_TRUE(in.constraint.has_value());
  EXPECT_EQ(in.constraint->kind, K::kJsonSchema);
  EXPECT_EQ(in.constraint->text, R"({"type":"object"})");
  EXPECT_TRUE(in.constraint->whitespace_flexible);
  EXPECT_EQ(in.constraint_field, "constraint.json_schema");

  r.mutable_constraint()->mutable_json_object();
  in = FromGenerateRequest(r);
  EXPECT_EQ(in.constraint->kind, K::kJson);
  EXPECT_TRUE(in.constraint->object_only);
  EXPECT_EQ(in.constraint_field, "constraint.json_object");

  r.mutable_constraint()->set_flexible_whitespace(false);
  r.mutable_constraint()->set_regex("[a-z]+");
  in = FromGenerateRequest(r);
  EXPECT_EQ(in.constraint->kind, K::kRegex);
  EXPECT_EQ(in.constraint->text, "[a-z]+");
  EXPECT_FALSE(in.constraint->whitespace_flexible);
  EXPECT_EQ(in.constraint_field, "constraint.regex");

  r.mutable_constraint()->mutable_choice()->add_choices("yes");
  r.mutable_constraint()->mutable_choice()->add_choices("");
  in = FromGenerateRequest(r);
  EXPECT_EQ(in.constraint->kind, K::kChoice);
  EXPECT_EQ(in.constraint->choices, (std::vector<std::string>{"yes", ""}));
  EXPECT_EQ(in.constraint_field, "constraint.choice.choices");

  r.mutable_constraint()->set_grammar("root ::= \"a\"");
  in = FromGenerateRequest(r);
  EXPECT_EQ(in.constraint->kind, K::kGrammar);
  EXPECT_EQ(in.constraint->text, "root ::= \"a\"");
  EXPECT_EQ(in.constraint_field, "constraint.grammar");
}

// ToEngineRequest compiles through the cache and reports what it took; a second request
// with the same constraint is a hit and gets the same compiled constraint.
TEST(RequestConvertTest, ConstraintsCompileThroughTheCache) {
  auto vocab = ConstraintVocabulary(Tiny(), {2});
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  constraint::ConstraintCache cache(*vocab, constraint::CompileLimits(), 4);
  RequestLimits limits = Limits();
  limits.constraints = &cache;
  v1::GenerateRequest r = TextRequest("the cat");
  r.mutable_constraint()->mutable_choice()->add_choices("dog");
  ConstraintCompileReport first, second, none;
  auto a = ToEngineRequest(FromGenerateRequest(r), Tiny(), limits, "a", &first);
  auto b = ToEngineRequest(FromGenerateRequest(r), Tiny(), limits, "b", &second);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_NE(a->constraint, nullptr);
  EXPECT_EQ(a->constraint, b->constraint);
  EXPECT_TRUE(first.attempted);
  EXPECT_FALSE(first.cache_hit);
  EXPECT_EQ(first.kind, constraint::ConstraintKind::kChoice);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_TRUE(ToEngineRequest(FromGenerateRequest(TextRequest("the cat")), Tiny(), limits, "c", &none).ok());
  EXPECT_FALSE(none.attempted);
  // A request refused before the compile (its prompt) compiles nothing.
  v1::GenerateRequest bad = r;
  bad.set_text("");
  ConstraintCompileReport refused;
  EXPECT_FALSE(ToEngineRequest(FromGenerateRequest(bad), Tiny(), limits, "d", &refused).ok());
  EXPECT_FALSE(refused.attempted);
}

TEST(RequestConvertTest, ChunkAndFinal) {
  GenerationDelta d;
  d.ids = {5, 6};
  d.text = "ab";
  d.logprobs = {TokenLogprobs{5, -0.5f, {{5, -0.5f}, {9, -1.5f}}}, TokenLogprobs{6, -0.25f, {}}};
  v1::Chunk c;
  ToChunk(std::move(d), &c);
  EXPECT_EQ(std::vector<int32_t>(c.ids().begin(), c.ids().end()), (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(c.text(), "ab");
  ASSERT_EQ(c.logprobs_size(), 2);
  EXPECT_EQ(c.logprobs(0).id(), 5);
  EXPECT_EQ(c.logprobs(0).logprob(), -0.5f);
  ASSERT_EQ(c.logprobs(0).top_size(), 2);
  EXPECT_EQ(c.logprobs(0).top(1).id(), 9);
  EXPECT_EQ(c.logprobs(0).top(1).logprob(), -1.5f);
  EXPECT_EQ(c.logprobs(1).top_size(), 0);

  GenerationFinal f;
  f.reason = SequenceState::kFinishedStopString;
  f.stop_string = "cat";
  f.prompt_tokens = 4;
  f.completion_tokens = 9;
  f.queue_time = absl::Milliseconds(10);
  f.time_to_first_token = absl::Milliseconds(30);
  f.total_time = absl::Milliseconds(90);
  f.seed = 77;
  f.preemptions = 2;
  v1::Final out;
  ToFinal(f, "r-1", &out);
  EXPECT_EQ(out.finish_reason(), v1::FINISH_REASON_STOP_SEQUENCE);
  EXPECT_EQ(out.stop_sequence(), "cat");
  EXPECT_EQ(out.usage().prompt_tokens(), 4);
  EXPECT_EQ(out.usage().completion_tokens(), 9);
  EXPECT_DOUBLE_EQ(out.timings().queue_seconds(), 0.01);
  EXPECT_DOUBLE_EQ(out.timings().time_to_first_token_seconds(), 0.03);
  EXPECT_DOUBLE_EQ(out.timings().total_seconds(), 0.09);
  EXPECT_EQ(out.seed(), 77u);
  EXPECT_EQ(out.request_id(), "r-1");
  EXPECT_EQ(out.preemptions(), 2);
  EXPECT_TRUE(out.error().empty());
  EXPECT_TRUE(FinalCallStatus(f).ok());

  GenerationFinal e;
  e.reason = SequenceState::kFinishedError;
  e.status = absl::InternalError("forward pass failed: boom");
  v1::Final eout;
  ToFinal(e, "r-2", &eout);
  EXPECT_EQ(eout.finish_reason(), v1::FINISH_REASON_ERROR);
  EXPECT_EQ(eout.error(), "forward pass failed: boom");
  EXPECT_TRUE(eout.stop_sequence().empty());
  EXPECT_EQ(FinalCallStatus(e).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(FinalCallStatus(e).message(), "forward pass failed: boom");
  // Cut short: the call ends non-OK after the final.
  e.reason = SequenceState::kFinishedDeadline;
  EXPECT_EQ(FinalCallStatus(e).code(), absl::StatusCode::kDeadlineExceeded);
  e.reason = SequenceState::kFinishedCancelled;
  EXPECT_EQ(FinalCallStatus(e).code(), absl::StatusCode::kUnavailable);
  for (SequenceState ok : {SequenceState::kFinishedEos, SequenceState::kFinishedStopToken,
                           SequenceState::kFinishedStopString, SequenceState::kFinishedLength}) {
    e.reason = ok;
    EXPECT_TRUE(FinalCallStatus(e).ok()) << SequenceStateName(ok);
  }
}

TEST(RequestConvertTest, TokenizeAndDetokenize) {
  v1::TokenizeRequest tr;
  tr.set_text("the cat sat on the mat");
  tr.set_add_bos(true);
  v1::TokenizeResponse resp;
  ASSERT_TRUE(FillTokenize(tr, Tiny(), 0, &resp).ok());
  auto want = Tiny().Encode(tr.text(), EncodeOptions{.add_bos = true});
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(std::vector<int32_t>(resp.ids().begin(), resp.ids().end()), *want);
  ASSERT_EQ(resp.pieces_size(), resp.ids_size());
  for (int i = 0; i < resp.ids_size(); ++i) EXPECT_EQ(resp.pieces(i), Tiny().TokenBytes(resp.ids(i))) << i;
  EXPECT_EQ(resp.ids(0), Tiny().bos_id());

  v1::DetokenizeRequest dr;
  dr.mutable_ids()->CopyFrom(resp.ids());
  dr.set_skip_special(true);
  v1::DetokenizeResponse text;
  ASSERT_TRUE(FillDetokenize(dr, Tiny(), &text).ok());
  EXPECT_EQ(text.text(), "the cat sat on the mat");
  dr.set_skip_special(false);
  ASSERT_TRUE(FillDetokenize(dr, Tiny(), &text).ok());
  EXPECT_NE(text.text().find("<s>"), std::string::npos) << text.text();

  dr.add_ids(kVocab);
  const absl::Status bad = FillDetokenize(dr, Tiny(), &text);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("must be in [0, 64), got 64"), absl::string_view::npos) << bad;

  // A lone byte token's piece is U+FFFD, not invalid UTF-8.
  const int32_t byte_c3 = Tiny().PieceToId("<0xC3>");
  ASSERT_GE(byte_c3, 0);
  v1::TokenizeRequest e;
  e.set_text("\xC3\xA9");
  v1::TokenizeResponse er;
  ASSERT_TRUE(FillTokenize(e, Tiny(), 0, &er).ok());
  ASSERT_EQ(er.ids_size(), 2);
  EXPECT_EQ(er.ids(0), byte_c3);
  EXPECT_EQ(er.pieces(0), "\xEF\xBF\xBD");
}

// Appends a length-delimited field (wire type 2) to `wire`.
void AddBytesField(int number, const std::string& value, std::string* wire) {
  const int tag = (number << 3) | 2;
  if (tag >= 128) {  // a two-byte varint (field numbers 16..2047)
    wire->push_back(static_cast<char>((tag & 0x7F) | 0x80));
    wire->push_back(static_cast<char>(tag >> 7));
  } else {
    wire->push_back(static_cast<char>(tag));
  }
  wire->push_back(static_cast<char>(value.size()));  // < 128 here
  *wire += value;
}

TEST(ProtoWireTest, InvalidUtf8NamesTheField) {
  struct Case {
    std::vector<std::pair<int, std::string>> fields;
    const char* message;
  };
  std::string regex, choices;
  AddBytesField(3, "a\xFF", &regex);                       // OutputConstraint.regex
  AddBytesField(1, "ok", &choices);                        // ChoiceList.choices
  AddBytesField(1, "\xC3", &choices);
  std::string choice;
  AddBytesField(4, choices, &choice);                      // OutputConstraint.choice
  const std::vector<Case> cases = {
      {{{2, "ok\xFF"}}, "text must be valid UTF-8"},
      {{{2, "fine"}, {21, regex}}, "constraint.regex must be valid UTF-8"},
      {{{2, "fine"}, {21, choice}}, "constraint.choice.choices[1] must be valid UTF-8"},
      {{{1, "id\xC0\x80"}, {2, "fine"}}, "request_id must be valid UTF-8"},
      {{{2, "fine"}, {14, "a"}, {14, "\xED\xA0\x80"}}, "stop[1] must be valid UTF-8"},
  };
  for (const Case& c : cases) {
    std::string wire;
    for (const auto& [n, v] : c.fields) AddBytesField(n, v, &wire);
    v1::GenerateRequest r;
    const absl::Status s = ParseRequest(wire, &r);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(c.message), absl::string_view::npos) << s;
  }
  v1::TokenizeRequest t;
  std::string wire;
  AddBytesField(1, "\x80", &wire);
  const absl::Status s = ParseRequest(wire, &t);
  EXPECT_NE(s.message().find("text must be valid UTF-8"), absl::string_view::npos) << s;
}

TEST(ProtoWireTest, MalformedAndValid) {
  v1::GenerateRequest r;
  const absl::Status bad = ParseRequest(std::string("\x12\x7f" "abc", 5), &r);  // length beyond the end
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("not a valid llmserve.v1.GenerateRequest message"), absl::string_view::npos) << bad;

  v1::GenerateRequest in = TokenRequest(3);
  in.set_request_id("é-1");
  AddStop(in, "x");
  in.set_temperature(0.5f);
  std::string wire;
  ASSERT_TRUE(in.SerializeToString(&wire));
  v1::GenerateRequest out;
  ASSERT_TRUE(ParseRequest(wire, &out).ok());
  EXPECT_EQ(out.SerializeAsString(), wire);

  grpc::ByteBuffer buf;
  ASSERT_TRUE(SerializeResponse(in, &buf).ok());
  v1::GenerateRequest again;
  ASSERT_TRUE(ParseRequest(buf, &again).ok());
  EXPECT_EQ(again.request_id(), "é-1");
  v1::GenerateRequest empty;
  EXPECT_TRUE(ParseRequest(grpc::ByteBuffer(), &empty).ok());  // an empty message is valid
}

}  // namespace
}  // namespace llmserve
