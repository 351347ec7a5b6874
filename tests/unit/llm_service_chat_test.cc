// Chat inputs through LlmService on the real gRPC stack, over the fake engine model: the
// template renders the conversation, its special tokens are parsed, generation stops at
// the model's end-of-turn id (finish reason EOS, the token not in the text),
// ApplyChatTemplate shows the exact prompt, and bad chat inputs get clear statuses.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "model/chat/chat_prompt.h"
#include "server/llm_service.h"
#include "tests/util/fake_engine_model.h"
#include "tests/util/service_test_util.h"

namespace llmserve {
namespace {

namespace v1 = ::llmserve::v1;
using ::llmserve::testing::FakeEngineModel;
using ::llmserve::testing::FakeGreedy;
using ::llmserve::testing::FakeModelOptions;
using ::llmserve::testing::FakeModelState;
using ::llmserve::testing::Generate;
using ::llmserve::testing::Served;
using ::llmserve::testing::Stream;

// The tiny test tokenizer plus four control tokens a chat template writes.
constexpr int32_t kSystem = 64, kUser = 65, kAssistant = 66, kEnd = 67, kVocab = 68;
constexpr int32_t kEos = 2;

std::unique_ptr<Tokenizer> ChatTokenizer(bool add_bos = false) {
  TokenizerSpec spec = testing::MakeTinyTokenizer()->spec();
  spec.add_bos = add_bos;
  for (const char* t : {"<|system|>", "<|user|>", "<|assistant|>", "<|end|>"}) {
    spec.tokens.push_back(t);
    spec.types.push_back(TokenType::kControl);
    spec.scores.push_back(0.0f);
  }
  auto tok = CreateTokenizer(std::move(spec));
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? *std::move(tok) : nullptr;
}

// Ends every turn with <|end|>, as Phi-3's and ChatML templates do; writes BOS itself.
constexpr char kTemplate[] =
    "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}";

struct ChatHarness {
  std::shared_ptr<FakeModelState> state = std::make_shared<FakeModelState>();
  std::unique_ptr<Tokenizer> tok = ChatTokenizer();
  std::unique_ptr<ChatPrompter> prompter;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Served> served;

  explicit ChatHarness(bool with_template = true, int64_t max_prompt_bytes = 0) {
    if (with_template) {
      auto p = ChatPrompter::Create(kTemplate, "test", *tok);
      EXPECT_TRUE(p.ok()) << p.status();
      if (p.ok()) prompter = *std::move(p);
    }
    EngineConfig c;
    c.scheduler.block_size = 4;
    c.scheduler.max_running = 8;
    c.scheduler.max_batched_tokens = 64;
    c.scheduler.max_prefill_chunk = 32;
    c.scheduler.eos_ids = {kEos, kEnd};  // the model's end of text and end of turn
    FakeModelOptions o;
    o.vocab = kVocab;
    auto e = Engine::Create(c, std::make_unique<FakeEngineModel>(o, state), tok.get());
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok()) return;
    engine = *std::move(e);
    engine->Start();
    ServiceInfo info;
    info.model_name = "fake-chat";
    info.chat = prompter.get();
    info.chat_template_source = with_template ? "test" : "";
    info.max_prompt_bytes = max_prompt_bytes;
    served = std::make_unique<Served>(*engine, *tok, std::move(info));
  }
  ~ChatHarness() {
    if (engine != nullptr) engine->Stop();
    if (served != nullptr) served->Shutdown();
  }
};

v1::ChatInput Conversation(const std::string& user) {
  v1::ChatInput chat;
  v1::ChatMessage* s = chat.add_messages();
  s->set_role("system");
  s->set_content("be brief");
  v1::ChatMessage* u = chat.add_messages();
  u->set_role("user");
  u->set_content(user);
  return chat;
}

// The prompt ids the service must compute for `chat` (rendered, specials parsed, one BOS).
std::vector<int32_t> ExpectedPrompt(const ChatPrompter& p, const v1::ChatInput& chat) {
  ChatConversation c;
  for (const v1::ChatMessage& m : chat.messages()) c.messages.push_back({m.role(), m.content()});
  auto text = p.Render(c);
  EXPECT_TRUE(text.ok()) << text.status();
  auto ids = p.Encode(text.ok() ? *text : "");
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

TEST(LlmServiceChatTest, ApplyChatTemplateShowsTheRenderedPromptAndItsIds) {
  ChatHarness h;
  ASSERT_NE(h.served, nullptr);
  grpc::ClientContext ctx;
  v1::ApplyChatTemplateRequest req;
  *req.mutable_chat() = Conversation("the cat");
  v1::ApplyChatTemplateResponse resp;
  const grpc::Status s = h.served->stub->ApplyChatTemplate(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.text(), "<s><|system|>be brief<|end|><|user|>the cat<|end|><|assistant|>");
  const std::vector<int32_t> ids(resp.ids().begin(), resp.ids().end());
  EXPECT_EQ(ids, ExpectedPrompt(*h.prompter, req.chat()));
  // Special tokens are single ids, and the template's BOS is the only one.
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], kSystem);
  EXPECT_NE(ids[2], 1);
  EXPECT_EQ(ids.back(), kAssistant);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), kEnd), 2);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), kUser), 1);
}

TEST(LlmServiceChatTest, ReplyEndsAtTheEndOfTurnTokenWithFinishReasonEos) {
  ChatHarness h;
  ASSERT_NE(h.served, nullptr);
  // Find a user message whose greedy reply (the fake model is deterministic) reaches
  // <|end|> after a few ordinary tokens and before EOS.
  v1::ChatInput chat;
  std::vector<int32_t> before_end;
  for (int i = 0; i < 200 && before_end.empty(); ++i) {
    chat = Conversation("the cat sat " + std::string(static_cast<size_t>(i % 7 + 1), 'a') + std::to_string(i));
    const std::vector<int32_t> free_run = FakeGreedy(ExpectedPrompt(*h.prompter, chat), 48, kVocab);
    const auto end = std::find(free_run.begin(), free_run.end(), kEnd);
    const auto eos = std::find(free_run.begin(), free_run.end(), kEos);
    if (end != free_run.end() && end < eos && end - free_run.begin() >= 2) before_end.assign(free_run.begin(), end);
  }
  ASSERT_FALSE(before_end.empty()) << "no probe message reached <|end|> in 48 greedy tokens";

  v1::GenerateRequest req;
  *req.mutable_chat() = chat;
  req.set_temperature(0.0f);
  req.set_max_tokens(48);
  const Stream s = Generate(*h.served->stub, req);
  ASSERT_TRUE(s.status.ok()) << s.status.error_message();
  ASSERT_TRUE(s.final_msg.has_value());
  EXPECT_EQ(s.final_msg->finish_reason(), v1::FINISH_REASON_EOS);
  EXPECT_EQ(s.ids, before_end);
  EXPECT_EQ(s.final_msg->usage().completion_tokens(), static_cast<int32_t>(before_end.size()));
  EXPECT_EQ(s.final_msg->usage().prompt_tokens(), static_cast<int32_t>(ExpectedPrompt(*h.prompter, chat).size()));
  EXPECT_EQ(s.text.find("<|end|>"), std::string::npos) << s.text;
  EXPECT_EQ(s.text, h.tok->Decode(before_end));

  // ignore_eos covers the end-of-turn id too: the reply runs to max_tokens through it.
  req.set_ignore_eos(true);
  req.set_max_tokens(static_cast<int32_t>(before_end.size()) + 2);
  const Stream through = Generate(*h.served->stub, req);
  ASSERT_TRUE(through.final_msg.has_value());
  EXPECT_EQ(through.final_msg->finish_reason(), v1::FINISH_REASON_LENGTH);
  ASSERT_GT(through.ids.size(), before_end.size());
  EXPECT_EQ(through.ids[before_end.size()], kEnd);
}

TEST(LlmServiceChatTest, BadChatInputsAreRefusedClearly) {
  ChatHarness h;
  ASSERT_NE(h.served, nullptr);
  struct Case {
    const char* name;
    v1::ChatInput chat;
    const char* want;
  };
  std::vector<Case> cases;
  cases.push_back({"no messages", v1::ChatInput(), "chat.messages must be non-empty"});
  v1::ChatInput no_role = Conversation("x");
  no_role.mutable_messages(1)->clear_role();
  cases.push_back({"empty role", no_role, "chat.messages[1].role"});
  v1::ChatInput tools = Conversation("x");
  tools.set_tools_json("{not json");
  cases.push_back({"bad tools", tools, "tools_json"});
  v1::ChatInput many;
  for (int i = 0; i < 1025; ++i) *many.add_messages() = Conversation("x").messages(1);
  cases.push_back({"too many", many, "at most 1024"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    v1::GenerateRequest req;
    *req.mutable_chat() = c.chat;
    const Stream s = Generate(*h.served->stub, req);
    EXPECT_EQ(s.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.status.error_message().find(c.want), std::string::npos) << s.status.error_message();
    EXPECT_FALSE(s.final_msg.has_value());
  }
}

TEST(LlmServiceChatTest, ChatTextIsBoundedByMaxPromptBytesBeforeRendering) {
  // "system" + "be brief" + "user" + the user's content: 20 bytes with a 2-byte content.
  ChatHarness h(true, 20);
  ASSERT_NE(h.served, nullptr);
  {
    v1::GenerateRequest req;
    *req.mutable_chat() = Conversation("hi");
    req.set_max_tokens(2);
    const Stream s = Generate(*h.served->stub, req);
    EXPECT_TRUE(s.status.ok()) << s.status.error_message();
  }
  const std::string want = "chat (roles, contents and tools_json) must be at most 20 bytes";
  {
    v1::GenerateRequest req;
    *req.mutable_chat() = Conversation("hi!");
    const Stream s = Generate(*h.served->stub, req);
    EXPECT_EQ(s.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.status.error_message().find(want + " (the server's --max-prompt-bytes), got 21"), std::string::npos)
        << s.status.error_message();
  }
  {
    grpc::ClientContext ctx;
    v1::ApplyChatTemplateRequest req;
    *req.mutable_chat() = Conversation("hi");
    req.mutable_chat()->set_tools_json("[]");
    v1::ApplyChatTemplateResponse resp;
    const grpc::Status s = h.served->stub->ApplyChatTemplate(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find(want), std::string::npos) << s.error_message();
  }
}

TEST(LlmServiceChatTest, ATemplateThatRaisesIsTheClientsError) {
  std::unique_ptr<Tokenizer> tok = ChatTokenizer();
  auto p = ChatPrompter::Create(
      "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
      "{{ messages[0].content }}",
      "raising", *tok);
  ASSERT_TRUE(p.ok()) << p.status();
  ChatConversation c;
  c.messages = {{"system", "hi"}};
  const absl::Status s = (*p)->Render(c).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("System role not supported"), std::string::npos) << s;
  c.messages = {{"user", "hi"}};
  auto ok = (*p)->Render(c);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, "hi");
}

TEST(LlmServiceChatTest, NoTemplateIsFailedPrecondition) {
  ChatHarness h(/*with_template=*/false);
  ASSERT_NE(h.served, nullptr);
  v1::GenerateRequest req;
  *req.mutable_chat() = Conversation("the cat");
  const Stream s = Generate(*h.served->stub, req);
  EXPECT_EQ(s.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.status.error_message().find("--chat-template"), std::string::npos) << s.status.error_message();
  grpc::ClientContext ctx;
  v1::ApplyChatTemplateRequest areq;
  *areq.mutable_chat() = req.chat();
  v1::ApplyChatTemplateResponse aresp;
  EXPECT_EQ(h.served->stub->ApplyChatTemplate(&ctx, areq, &aresp).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  // Text prompts still work.
  EXPECT_TRUE(Generate(*h.served->stub, testing::Greedy("the cat", 3)).status.ok());
}

TEST(LlmServiceChatTest, ABosTheTemplateDoesNotWriteIsAddedOnce) {
  for (bool add_bos : {false, true}) {
    SCOPED_TRACE(add_bos ? "tokenizer adds BOS" : "tokenizer adds no BOS");
    std::unique_ptr<Tokenizer> tok = ChatTokenizer(add_bos);
    auto with = ChatPrompter::Create(kTemplate, "with-bos", *tok);
    auto without = ChatPrompter::Create("{% for m in messages %}{{ m.content }}{% endfor %}", "no-bos", *tok);
    ASSERT_TRUE(with.ok() && without.ok());
    ChatConversation c;
    c.messages = {{"user", "the cat"}};
    const std::vector<int32_t> a = *(*with)->Encode(*(*with)->Render(c));
    const std::vector<int32_t> b = *(*without)->Encode(*(*without)->Render(c));
    const int32_t bos = tok->bos_id();
    // The template wrote "<s>": that is the prompt's one BOS either way.
    EXPECT_EQ(a[0], bos);
    EXPECT_EQ(std::count(a.begin(), a.end(), bos), 1);
    // It wrote none: the tokenizer's default decides.
    EXPECT_EQ(std::count(b.begin(), b.end(), bos), add_bos ? 1 : 0);
    EXPECT_EQ(b[0] == bos, add_bos);
  }
}

}  // namespace
}  // namespace llmserve
