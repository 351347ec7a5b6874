// Synthetic GGUF files for tests: every metadata type; tiny models (llama with GQA and
// mixed F32/F16/BF16 tensors; gpt2 with biases and tied embeddings).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tests/util/gguf_writer.h"

namespace llmserve::testing {

// Element k of the tensor named `name`: multiples of 1/8 in [-2, 2), exact in F16 and BF16.
inline float TinyValue(const std::string& name, int64_t k) {
  int64_t seed = 0;
  for (unsigned char c : name) seed = (seed * 31 + c) % 1000003;
  return static_cast<float>((k * 7 + seed) % 32 - 16) / 8.0f;
}

// TinyValue for every element of a tensor of `n` elements.
inline std::vector<float> TinyValues(const std::string& name, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = TinyValue(name, k);
  return v;
}

// No tensors: one key of every scalar type (extreme values), arrays of every element
// type (29 keys in all), and a nested array [[1, 2], [["deep"]], []].
inline GgufWriter EveryTypeWriter(uint32_t version = 3) {
  GgufWriter w(version);
  w.Scalar<uint8_t>("t.u8", GgufType::kU8, 250);
  w.Scalar<int8_t>("t.i8", GgufType::kI8, -100);
  w.Scalar<uint16_t>("t.u16", GgufType::kU16, 65000);
  w.Scalar<int16_t>("t.i16", GgufType::kI16, -32000);
  w.Scalar<uint32_t>("t.u32", GgufType::kU32, 4000000000u);
  w.Scalar<int32_t>("t.i32", GgufType::kI32, -2000000000);
  w.Scalar<float>("t.f32", GgufType::kF32, 0.15625f);
  w.Bool("t.bool_true", true);
  w.Bool("t.bool_false", false);
  w.String("t.string", "h\xc3\xa9llo\n");
  w.String("t.empty_string", "");
  w.Scalar<uint64_t>("t.u64", GgufType::kU64, std::numeric_limits<uint64_t>::max());
  w.Scalar<int64_t>("t.i64", GgufType::kI64, std::numeric_limits<int64_t>::min());
  w.Scalar<double>("t.f64", GgufType::kF64, -1.0e300);
  w.Array<uint8_t>("a.u8", GgufType::kU8, {0, 1, 255});
  w.Array<int8_t>("a.i8", GgufType::kI8, {-128, 127});
  w.Array<uint16_t>("a.u16", GgufType::kU16, {65535});
  w.Array<int16_t>("a.i16", GgufType::kI16, {-32768, 5});
  w.Array<uint32_t>("a.u32", GgufType::kU32, {4294967295u, 7});
  w.Array<int32_t>("a.i32", GgufType::kI32, {-1, 2, -3});
  w.Array<float>("a.f32", GgufType::kF32, {1.5f, -0.25f});
  w.Array<uint8_t>("a.bool", GgufType::kBool, {1, 0, 1});
  w.StringArray("a.string", {"x", "", "\xe2\x96\x81the"});
  w.Array<uint64_t>("a.u64", GgufType::kU64, {uint64_t{1} << 40, 3});
  w.Array<int64_t>("a.i64", GgufType::kI64, {-(int64_t{1} << 50)});
  w.Array<double>("a.f64", GgufType::kF64, {2.5, 1e-300});
  w.Array<uint32_t>("a.empty", GgufType::kU32, {});
  w.Array<uint64_t>("a.u64_big", GgufType::kU64, {std::numeric_limits<uint64_t>::max()});
  w.Kv("a.nested", GgufType::kArray, [](GgufEncoder& e) {
    e.ArrayHeader(GgufType::kArray, 3, "outer");
    e.ArrayHeader(GgufType::kU16, 2, "inner0");
    e.Raw(uint16_t{1});
    e.Raw(uint16_t{2});
    e.ArrayHeader(GgufType::kArray, 1, "inner1");
    e.ArrayHeader(GgufType::kString, 1, "inner1.0");
    e.Str("deep");
    e.ArrayHeader(GgufType::kF32, 0, "inner2");
  });
  return w;
}

// Shape constants of the tiny llama.
struct TinyLlama {
  static constexpr int64_t kDim = 16, kHeads = 4, kKvHeads = 2, kHeadDim = 4, kFfn = 32, kLayers = 2,
                           kVocab = 12, kContext = 64;
};

struct TinyLlamaOptions {
  uint32_t version = 3;
  bool tied = false;            // omit output.weight
  uint32_t ffn_down_type = 1;   // GGML type of blk.*.ffn_down.weight: F16, or a block type
                                // of 32 (Q8_0 = 8, IQ4_NL = 20, ...), filled with 0x11 bytes
  bool tokenizer = true;        // write tokenizer.ggml.* metadata
  std::string omit_tensor;      // leave this tensor out
};

// The metadata and tensors of the tiny llama (callers may add more before Build()).
inline GgufWriter TinyLlamaWriter(const TinyLlamaOptions& o = {}) {
  using T = TinyLlama;
  GgufWriter w(o.version);
  w.String("general.architecture", "llama");
  w.String("general.name", "tiny-llama");
  w.U32("llama.context_length", T::kContext);
  w.U32("llama.embedding_length", T::kDim);
  w.U32("llama.block_count", T::kLayers);
  w.U32("llama.feed_forward_length", T::kFfn);
  w.U32("llama.attention.head_count", T::kHeads);
  w.U32("llama.attention.head_count_kv", T::kKvHeads);
  w.F32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.F32("llama.rope.freq_base", 500000.0f);
  if (o.tokenizer) {
    w.String("tokenizer.ggml.model", "llama");
    w.StringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "<0x00>", "<0x01>", "\xe2\x96\x81" "a",
                                            "\xe2\x96\x81" "b", "a", "b", "\xe2\x96\x81", "ab", "\xe2\x96\x81" "ab"});
    w.Array<float>("tokenizer.ggml.scores", GgufType::kF32, {0, 0, 0, 0, 0, -1, -2, -3, -4, -5, -6, -7});
    w.Array<int32_t>("tokenizer.ggml.token_type", GgufType::kI32, {2, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1});
    w.U32("tokenizer.ggml.bos_token_id", 1);
    w.U32("tokenizer.ggml.eos_token_id", 2);
    w.U32("tokenizer.ggml.unknown_token_id", 0);
  }
  auto add = [&](const std::string& name, DType dtype, std::vector<uint64_t> dims) {
    if (name == o.omit_tensor) return;
    int64_t n = 1;
    for (uint64_t d : dims) n *= static_cast<int64_t>(d);
    w.FloatTensor(name, dtype, std::move(dims), TinyValues(name, n));
  };
  const uint64_t d = T::kDim, kv = T::kKvHeads * T::kHeadDim, f = T::kFfn;
  add("token_embd.weight", DType::kF16, {d, T::kVocab});
  for (int l = 0; l < T::kLayers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", DType::kF32, {d});
    add(p + "attn_q.weight", DType::kF32, {d, d});
    add(p + "attn_k.weight", DType::kBF16, {d, kv});
    add(p + "attn_v.weight", DType::kF16, {d, kv});
    add(p + "attn_output.weight", DType::kBF16, {d, d});
    add(p + "ffn_norm.weight", DType::kF32, {d});
    add(p + "ffn_gate.weight", DType::kF16, {d, f});
    add(p + "ffn_up.weight", DType::kBF16, {d, f});
    if (o.ffn_down_type != 1) {
      // Blocks of 32 elements along rows of f = 32 (the 0x11 bytes make f16 scales of 2.9e-4).
      const auto traits = GgmlTypeInfo(o.ffn_down_type);
      std::vector<uint8_t> q(d * (f / traits->block_size) * traits->type_size, 0x11);
      w.Tensor(p + "ffn_down.weight", o.ffn_down_type, {f, d}, std::move(q));
    } else {
      add(p + "ffn_down.weight", DType::kF16, {f, d});
    }
  }
  add("output_norm.weight", DType::kF32, {d});
  if (!o.tied) add("output.weight", DType::kBF16, {d, T::kVocab});
  return w;
}

// Shape constants of the tiny gpt2.
struct TinyGpt2 {
  static constexpr int64_t kDim = 8, kHeads = 2, kFfn = 32, kLayers = 1, kVocab = 10, kContext = 16;
};

// The tiny gpt2: LayerNorm with biases, learned positions, fused QKV with bias, tied output.
inline GgufWriter TinyGpt2Writer(uint32_t version = 3) {
  using T = TinyGpt2;
  GgufWriter w(version);
  w.String("general.architecture", "gpt2");
  w.String("general.name", "tiny-gpt2");
  w.U32("gpt2.context_length", T::kContext);
  w.U32("gpt2.embedding_length", T::kDim);
  w.U32("gpt2.block_count", T::kLayers);
  w.U32("gpt2.feed_forward_length", T::kFfn);
  w.U32("gpt2.attention.head_count", T::kHeads);
  w.F32("gpt2.attention.layer_norm_epsilon", 1e-5f);
  w.String("tokenizer.ggml.model", "gpt2");
  w.String("tokenizer.ggml.pre", "gpt-2");
  w.StringArray("tokenizer.ggml.tokens", {"a", "b", "c", "\xc4\xa0", "ab", "\xc4\xa0" "a", "\xc4\xa0" "b", "abc",
                                          "<|endoftext|>", "\xc4\xa0" "ab"});
  w.StringArray("tokenizer.ggml.merges", {"a b", "\xc4\xa0 a", "\xc4\xa0 b", "ab c", "\xc4\xa0 ab"});
  w.Array<int32_t>("tokenizer.ggml.token_type", GgufType::kI32, {1, 1, 1, 1, 1, 1, 1, 1, 3, 1});
  w.U32("tokenizer.ggml.bos_token_id", 8);
  w.U32("tokenizer.ggml.eos_token_id", 8);
  auto add = [&](const std::string& name, DType dtype, std::vector<uint64_t> dims) {
    int64_t n = 1;
    for (uint64_t d : dims) n *= static_cast<int64_t>(d);
    w.FloatTensor(name, dtype, std::move(dims), TinyValues(name, n));
  };
  const uint64_t d = T::kDim, f = T::kFfn;
  add("token_embd.weight", DType::kF16, {d, T::kVocab});
  add("position_embd.weight", DType::kF32, {d, T::kContext});
  add("blk.0.attn_norm.weight", DType::kF32, {d});
  add("blk.0.attn_norm.bias", DType::kF32, {d});
  add("blk.0.attn_qkv.weight", DType::kF32, {d, 3 * d});
  add("blk.0.attn_qkv.bias", DType::kF32, {3 * d});
  add("blk.0.attn_output.weight", DType::kF32, {d, d});
  add("blk.0.attn_output.bias", DType::kF32, {d});
  add("blk.0.ffn_norm.weight", DType::kF32, {d});
  add("blk.0.ffn_norm.bias", DType::kF32, {d});
  add("blk.0.ffn_up.weight", DType::kF32, {d, f});
  add("blk.0.ffn_up.bias", DType::kF32, {f});
  add("blk.0.ffn_down.weight", DType::kF32, {f, d});
  add("blk.0.ffn_down.bias", DType::kF32, {d});
  add("output_norm.weight", DType::kF32, {d});
  add("output_norm.bias", DType::kF32, {d});
  return w;
}

}  // namespace llmserve::testing
