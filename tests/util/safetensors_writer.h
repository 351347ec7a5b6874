// Test helpers: write small safetensors files and HuggingFace model directories.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/dtype.h"
#include "nlohmann/json.hpp"

namespace llmserve::testing {

// Writes `bytes` to `path` (replacing it). The old file is unlinked first: truncating
// and rewriting it in place makes ext4 flush it on close, which is slow.
inline void WriteFileBytes(const std::string& path, const std::string& bytes) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

// The whole content of `path`.
inline std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Appends the little-endian bytes of `v`.
template <typename T>
void AppendLE(std::string* out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out->append(b, sizeof(T));
}

// float -> IEEE half, round to nearest even; only normal/zero results (test values are small).
inline uint16_t F32ToF16ForTest(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((u >> 23) & 0xff) - 127 + 15;
  uint32_t mant = u & 0x7fffffu;
  if ((u & 0x7fffffffu) == 0) return static_cast<uint16_t>(sign);
  if (exp <= 0 || exp >= 31) ADD_FAILURE() << "F32ToF16ForTest: " << f << " out of the normal half range";
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(h);
}

// Encodes floats as safetensors dtype "F32", "F16" or "BF16".
inline std::string EncodeFloats(const std::vector<float>& v, const std::string& dtype) {
  std::string out;
  for (float f : v) {
    if (dtype == "F32") AppendLE(&out, f);
    else if (dtype == "F16") AppendLE(&out, F32ToF16ForTest(f));
    else if (dtype == "BF16") AppendLE(&out, F32ToBF16(f));
    else ADD_FAILURE() << "EncodeFloats: unsupported dtype " << dtype;
  }
  return out;
}

// A tensor to write: raw data bytes in the given dtype.
struct StTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string data;
};

// A safetensors image with the given JSON header text (padded to 8 bytes) and data.
inline std::string SafetensorsRaw(std::string header, const std::string& data) {
  while (header.size() % 8 != 0) header += ' ';
  std::string out;
  AppendLE(&out, static_cast<uint64_t>(header.size()));
  return out + header + data;
}

// A well-formed safetensors image of `tensors` (data laid out in order).
inline std::string SafetensorsBytes(const std::vector<StTensor>& tensors,
                                    const nlohmann::json& metadata = nlohmann::json()) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.is_null()) header["__metadata__"] = metadata;
  std::string data;
  for (const StTensor& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + t.data.size()}}};
    data += t.data;
  }
  return SafetensorsRaw(header.dump(), data);
}

// FNV-1a of `s`: a stable per-tensor seed.
inline uint32_t NameSeed(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

// Deterministic element i of the tensor named `name`: k/16 with |k| <= 30, so exact in
// F32, F16 and BF16.
inline float TestValue(const std::string& name, uint64_t i) {
  const uint64_t k = (NameSeed(name) % 61 + i * 7) % 61;
  return (static_cast<float>(k) - 30.0f) / 16.0f;
}

// Deterministic values for `numel` elements of tensor `name`.
inline std::vector<float> TestValues(const std::string& name, int64_t numel) {
  std::vector<float> v(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) v[i] = TestValue(name, i);
  return v;
}

// A named shape in HuggingFace naming.
struct HfSpec {
  std::string name;
  std::vector<int64_t> shape;
};

// HF tensors of a tiny Llama/Mistral/Qwen2 model.
inline std::vector<HfSpec> LlamaHfSpecs(int64_t layers, int64_t dim, int64_t ffn, int64_t heads, int64_t kv_heads,
                                        int64_t head_dim, int64_t vocab, bool lm_head, bool qkv_bias,
                                        bool out_bias = false) {
  std::vector<HfSpec> s = {{"model.embed_tokens.weight", {vocab, dim}}, {"model.norm.weight", {dim}}};
  if (lm_head) s.push_back({"lm_head.weight", {vocab, dim}});
  for (int64_t i = 0; i < layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    s.push_back({p + "input_layernorm.weight", {dim}});
    s.push_back({p + "post_attention_layernorm.weight", {dim}});
    s.push_back({p + "self_attn.q_proj.weight", {heads * head_dim, dim}});
    s.push_back({p + "self_attn.k_proj.weight", {kv_heads * head_dim, dim}});
    s.push_back({p + "self_attn.v_proj.weight", {kv_heads * head_dim, dim}});
    s.push_back({p + "self_attn.o_proj.weight", {dim, heads * head_dim}});
    if (qkv_bias) {
      s.push_back({p + "self_attn.q_proj.bias", {heads * head_dim}});
      s.push_back({p + "self_attn.k_proj.bias", {kv_heads * head_dim}});
      s.push_back({p + "self_attn.v_proj.bias", {kv_heads * head_dim}});
    }
    if (out_bias) s.push_back({p + "self_attn.o_proj.bias", {dim}});
    s.push_back({p + "mlp.gate_proj.weight", {ffn, dim}});
    s.push_back({p + "mlp.up_proj.weight", {ffn, dim}});
    s.push_back({p + "mlp.down_proj.weight", {dim, ffn}});
  }
  return s;
}

// HF tensors of a tiny GPT-2 (Conv1D weights stored [in, out]), names prefixed by `prefix`.
inline std::vector<HfSpec> Gpt2HfSpecs(int64_t layers, int64_t dim, int64_t ffn, int64_t ctx, int64_t vocab,
                                       const std::string& prefix) {
  std::vector<HfSpec> s = {{prefix + "wte.weight", {vocab, dim}}, {prefix + "wpe.weight", {ctx, dim}},
                           {prefix + "ln_f.weight", {dim}},       {prefix + "ln_f.bias", {dim}}};
  for (int64_t i = 0; i < layers; ++i) {
    const std::string p = prefix + "h." + std::to_string(i) + ".";
    for (const char* ln : {"ln_1", "ln_2"}) {
      s.push_back({p + ln + ".weight", {dim}});
      s.push_back({p + ln + ".bias", {dim}});
    }
    s.push_back({p + "attn.c_attn.weight", {dim, 3 * dim}});
    s.push_back({p + "attn.c_attn.bias", {3 * dim}});
    s.push_back({p + "attn.c_proj.weight", {dim, dim}});
    s.push_back({p + "attn.c_proj.bias", {dim}});
    s.push_back({p + "mlp.c_fc.weight", {dim, ffn}});
    s.push_back({p + "mlp.c_fc.bias", {ffn}});
    s.push_back({p + "mlp.c_proj.weight", {ffn, dim}});
    s.push_back({p + "mlp.c_proj.bias", {dim}});
    s.push_back({p + "attn.bias", {1, 1, ctx, ctx}});  // causal-mask buffer, ignored by loaders
  }
  return s;
}

// Builds the tensors of `specs` filled with TestValues in `dtype`.
inline std::vector<StTensor> MakeTensors(const std::vector<HfSpec>& specs, const std::string& dtype) {
  std::vector<StTensor> out;
  for (const HfSpec& s : specs) {
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    out.push_back({s.name, dtype, s.shape, EncodeFloats(TestValues(s.name, n), dtype)});
  }
  return out;
}

// Writes `tensors` into dir as model.safetensors (num_shards == 1) or as `num_shards`
// round-robin shards plus model.safetensors.index.json.
inline void WriteHfWeights(const std::string& dir, const std::vector<StTensor>& tensors, int num_shards = 1) {
  std::filesystem::create_directories(dir);
  if (num_shards == 1) {
    WriteFileBytes(dir + "/model.safetensors", SafetensorsBytes(tensors, {{"format", "pt"}}));
    return;
  }
  std::vector<std::vector<StTensor>> parts(num_shards);
  nlohmann::json weight_map = nlohmann::json::object();
  auto shard_name = [&](int k) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", k + 1, num_shards);
    return std::string(buf);
  };
  for (size_t i = 0; i < tensors.size(); ++i) {
    parts[i % num_shards].push_back(tensors[i]);
    weight_map[tensors[i].name] = shard_name(static_cast<int>(i % num_shards));
  }
  for (int k = 0; k < num_shards; ++k) WriteFileBytes(dir + "/" + shard_name(k), SafetensorsBytes(parts[k]));
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}};
  WriteFileBytes(dir + "/model.safetensors.index.json", index.dump(2));
}

// Writes dir/config.json.
inline void WriteConfig(const std::string& dir, const nlohmann::json& config) {
  std::filesystem::create_directories(dir);
  WriteFileBytes(dir + "/config.json", config.dump(2));
}

}  // namespace llmserve::testing
