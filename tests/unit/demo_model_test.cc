// The built-in demo model: deterministic weights, a complete Llama-shaped tensor set, a
// byte vocabulary that round-trips any text, and greedy generation that repeats exactly
// and stays printable ASCII.
#include "server/demo_model.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/greedy_runner.h"
#include "model/transformer.h"
#include "server/model_setup.h"

namespace llmserve {
namespace {

DemoModel MakeOrDie() {
  auto demo = MakeDemoModel();
  EXPECT_TRUE(demo.ok()) << demo.status();
  return demo.ok() ? *std::move(demo) : DemoModel{};
}

TEST(DemoModelTest, ConfigIsTheDocumentedShape) {
  const ModelConfig c = DemoModelConfig();
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  EXPECT_EQ(c.arch, Architecture::kLlama);
  EXPECT_EQ(c.vocab_size, 258);
  EXPECT_EQ(c.num_layers, 4);
  EXPECT_EQ(c.hidden_size, 256);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.context_length, 2048);
  EXPECT_EQ(c.bos_id, 256);
  EXPECT_EQ(c.eos_id, 257);
}

TEST(DemoModelTest, WeightsAreCompleteAndIdenticalEveryTime) {
  DemoModel a = MakeOrDie(), b = MakeOrDie();
  ASSERT_NE(a.weights, nullptr);
  ASSERT_NE(b.weights, nullptr);
  EXPECT_TRUE(a.weights->CheckComplete("demo").ok());
  ASSERT_EQ(a.weights->tensors().size(), b.weights->tensors().size());
  for (const auto& [name, t] : a.weights->tensors()) {
    const TensorView* u = b.weights->Find(name);
    ASSERT_NE(u, nullptr) << name;
    ASSERT_EQ(t.nbytes, u->nbytes) << name;
    EXPECT_EQ(std::memcmp(t.data, u->data, t.nbytes), 0) << name << " differs between two builds";
  }
  // Layers are not copies of each other.
  const TensorView* q0 = a.weights->Find("blk.0.attn_q.weight");
  const TensorView* q1 = a.weights->Find("blk.1.attn_q.weight");
  ASSERT_NE(q0, nullptr);
  ASSERT_NE(q1, nullptr);
  EXPECT_NE(std::memcmp(q0->data, q1->data, q0->nbytes), 0);
  EXPECT_GT(CountParameters(*a.weights), 3'000'000);
}

TEST(DemoModelTest, ByteVocabularyRoundTripsAnyText) {
  DemoModel demo = MakeOrDie();
  ASSERT_NE(demo.tokenizer, nullptr);
  const Tokenizer& tok = *demo.tokenizer;
  EXPECT_EQ(tok.vocab_size(), 258);
  EXPECT_EQ(tok.bos_id(), 256);
  EXPECT_EQ(tok.eos_id(), 257);
  EXPECT_TRUE(tok.add_bos_default());
  const std::string text = " Hello, wörld!\n\t日本 ";
  auto ids = tok.Encode(text, EncodeOptions{.add_bos = true});
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_EQ(ids->size(), text.size() + 1);  // one id per byte, after BOS
  EXPECT_EQ((*ids)[0], 256);
  for (size_t i = 0; i < text.size(); ++i) EXPECT_EQ((*ids)[i + 1], static_cast<unsigned char>(text[i])) << i;
  EXPECT_EQ(tok.Decode(*ids), text);
  EXPECT_EQ(tok.TokenBytes('A'), "A");
}

TEST(DemoModelTest, GreedyGenerationRepeatsAndIsPrintable) {
  DemoModel demo = MakeOrDie();
  ASSERT_NE(demo.weights, nullptr);
  RuntimeConfig rt;
  rt.weight_dtype = DType::kF32;
  rt.threads = 2;
  auto model = Transformer::Create(*demo.weights, rt);
  ASSERT_TRUE(model.ok()) << model.status();
  auto prompt = demo.tokenizer->Encode("Once upon a time", EncodeOptions{.add_bos = true});
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  GreedyOptions opt;
  opt.max_tokens = 24;
  opt.stop_ids = {demo.tokenizer->eos_id()};
  auto first = RunGreedy(**model, {*prompt}, opt);
  auto second = RunGreedy(**model, {*prompt}, opt);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  const std::vector<int32_t>& ids = (*first)[0].generated;
  ASSERT_EQ(ids.size(), 24u);
  EXPECT_EQ(ids, (*second)[0].generated);
  // A fresh build of the model generates the same.
  DemoModel again = MakeOrDie();
  ASSERT_NE(again.weights, nullptr);
  auto model2 = Transformer::Create(*again.weights, rt);
  ASSERT_TRUE(model2.ok()) << model2.status();
  auto third = RunGreedy(**model2, {*prompt}, opt);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ((*third)[0].generated, ids);
  // Printable ASCII (or newline) only, and not one byte repeated throughout.
  for (int32_t id : ids) EXPECT_TRUE(id == '\n' || (id >= 0x20 && id < 0x7f)) << id;
  int distinct = 0;
  for (size_t i = 1; i < ids.size(); ++i) distinct += ids[i] != ids[0] ? 1 : 0;
  EXPECT_GT(distinct, 0);
}

}  // namespace
}  // namespace llmserve
