// ChatPrompter over real tokenizers and the chat templates their files carry (Qwen2's
// tokenizer_config.json, Phi-3's GGUF tokenizer.chat_template): the template is found, the
// rendered special tokens become single ids, BOS appears once where the tokenizer adds
// one, and the ids decode back to the rendered text.
#include "model/chat/chat_prompt.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/formats/gguf_file.h"
#include "model/formats/gguf_tokenizer.h"
#include "model/tokenizer/vocab_files.h"
#include "tests/util/test_assets.h"

namespace llmserve {
namespace {

ChatConversation TwoTurns() {
  ChatConversation c;
  c.messages = {{"user", "Name a color."}, {"assistant", "Blue."}, {"user", "Another one?"}};
  return c;
}

int Count(const std::vector<int32_t>& ids, int32_t id) { return static_cast<int>(std::count(ids.begin(), ids.end(), id)); }

TEST(ChatPromptTest, Qwen2TemplateFromTokenizerConfig) {
  LLMSERVE_REQUIRE_ASSET(vocab, "models/tokenizers/bpe/qwen2/vocab.json");
  LLMSERVE_REQUIRE_ASSET(merges, "models/tokenizers/bpe/qwen2/merges.txt");
  auto spec = TokenizerSpecFromVocabMerges(vocab, merges, "qwen2");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_FALSE(spec->chat_template.empty());
  auto tok = CreateTokenizer(*spec);
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto p = ChatPrompter::Create(spec->chat_template, "tokenizer_config.json", **tok);
  ASSERT_TRUE(p.ok()) << p.status();
  auto text = (*p)->Render(TwoTurns());
  ASSERT_TRUE(text.ok()) << text.status();
  // The template's default system turn, then the three turns, then the assistant's opening.
  EXPECT_EQ(text->rfind("<|im_start|>system\n", 0), 0u) << *text;
  EXPECT_NE(text->find("<|im_start|>user\nName a color.<|im_end|>\n<|im_start|>assistant\nBlue.<|im_end|>\n"),
            std::string::npos)
      << *text;
  EXPECT_TRUE(text->ends_with("<|im_start|>user\nAnother one?<|im_end|>\n<|im_start|>assistant\n")) << *text;
  auto ids = (*p)->Encode(*text);
  ASSERT_TRUE(ids.ok()) << ids.status();
  constexpr int32_t kImStart = 151644, kImEnd = 151645;
  EXPECT_EQ(ids->front(), kImStart);  // no BOS: Qwen2 adds none
  EXPECT_EQ(Count(*ids, kImStart), 5);
  EXPECT_EQ(Count(*ids, kImEnd), 4);
  DecodeOptions keep;
  keep.skip_special = false;
  EXPECT_EQ((*tok)->Decode(*ids, keep), *text);
  // Without special-token parsing the same text would be many ordinary tokens.
  auto plain = (*tok)->Encode(*text, EncodeOptions{});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(Count(*plain, kImStart), 0);
}

TEST(ChatPromptTest, Phi3TemplateFromGguf) {
  LLMSERVE_REQUIRE_ASSET(path, "models/tokenizers/gguf/ggml-vocab-phi-3.gguf");
  auto g = GgufFile::Open(path);
  ASSERT_TRUE(g.ok()) << g.status();
  auto spec = TokenizerSpecFromGguf(**g);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_FALSE(spec->chat_template.empty());
  ASSERT_TRUE(spec->add_bos);
  auto tok = CreateTokenizer(*spec);
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto p = ChatPrompter::Create(spec->chat_template, "gguf", **tok);
  ASSERT_TRUE(p.ok()) << p.status();
  auto text = (*p)->Render(TwoTurns());
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_NE(text->find("<|user|>\nName a color.<|end|>\n<|assistant|>\nBlue.<|end|>\n"), std::string::npos) << *text;
  auto ids = (*p)->Encode(*text);
  ASSERT_TRUE(ids.ok()) << ids.status();
  const int32_t bos = (*tok)->bos_id(), user = (*tok)->PieceToId("<|user|>"), end = (*tok)->PieceToId("<|end|>");
  ASSERT_GE(user, 0);
  ASSERT_GE(end, 0);
  EXPECT_EQ(ids->front(), bos);
  EXPECT_EQ(Count(*ids, bos), 1);  // the tokenizer's one BOS, whether or not the template writes it
  EXPECT_EQ(Count(*ids, user), 2);
  EXPECT_EQ(Count(*ids, end), 3);
}

TEST(ChatPromptTest, ATemplateThatDoesNotParseIsRefusedWithItsPosition) {
  LLMSERVE_REQUIRE_ASSET(path, "models/tokenizers/gguf/ggml-vocab-phi-3.gguf");
  auto g = GgufFile::Open(path);
  ASSERT_TRUE(g.ok()) << g.status();
  auto spec = TokenizerSpecFromGguf(**g);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto tok = CreateTokenizer(*spec);
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto p = ChatPrompter::Create("{% for m in messages %}\n{{ m.content }\n{% endfor %}", "file bad.jinja", **tok);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("bad.jinja"), std::string::npos) << p.status();
  EXPECT_NE(p.status().message().find("line 2"), std::string::npos) << p.status();
}

}  // namespace
}  // namespace llmserve
