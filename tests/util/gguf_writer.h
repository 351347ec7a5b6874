// A small in-memory GGUF writer for tests. It records where every length, count and
// type field lands so that corruption tests can patch them.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "model/dtype.h"
#include "model/formats/gguf_types.h"
#include "tests/util/test_assets.h"

namespace llmserve::testing {

// What a recorded header field is.
enum class GgufFieldKind {
  kMagic, kVersion, kTensorCount, kKvCount,
  kKeyLength, kValueType, kStringLength, kArrayElemType, kArrayCount,
  kTensorNameLength, kNDims, kDim, kTensorType, kTensorOffset,
};

// One recorded field: `size` bytes (4 or 8) at absolute `offset`.
struct GgufFieldLoc {
  GgufFieldKind kind;
  size_t offset;
  size_t size;
  std::string label;
};

// Appends little-endian values to a buffer, recording fields.
class GgufEncoder {
 public:
  std::vector<uint8_t> bytes;
  std::vector<GgufFieldLoc> fields;

  template <typename T>
  void Raw(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    bytes.insert(bytes.end(), b, b + sizeof(T));
  }
  template <typename T>
  void Field(GgufFieldKind kind, T v, const std::string& label) {
    fields.push_back({kind, bytes.size(), sizeof(T), label});
    Raw(v);
  }
  void Str(const std::string& s, GgufFieldKind len_kind = GgufFieldKind::kStringLength) {
    Field(len_kind, static_cast<uint64_t>(s.size()), s);
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void Type(GgufType t, const std::string& label) { Field(GgufFieldKind::kValueType, static_cast<uint32_t>(t), label); }
  void ArrayHeader(GgufType elem, uint64_t count, const std::string& label) {
    Field(GgufFieldKind::kArrayElemType, static_cast<uint32_t>(elem), label);
    Field(GgufFieldKind::kArrayCount, count, label);
  }
  void Append(const GgufEncoder& other) {
    for (GgufFieldLoc f : other.fields) {
      f.offset += bytes.size();
      fields.push_back(f);
    }
    bytes.insert(bytes.end(), other.bytes.begin(), other.bytes.end());
  }
};

// float -> IEEE half, round to nearest even (normal and zero range; tests use exact values).
inline uint16_t TestF32ToF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const int32_t exp = static_cast<int32_t>((x >> 23) & 0xffu) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if ((x & 0x7fffffffu) == 0) return sign;
  if (exp <= 0 || exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // out of test range: inf
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

// Builds a GGUF file: metadata key/values, then tensors laid out at aligned offsets.
class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3) : version_(version) {}

  // Data-section alignment used for the layout (write general.alignment yourself to match).
  uint64_t alignment = 32;

  // A key with a value written by `value` (which must write exactly one value of `type`).
  void Kv(const std::string& key, GgufType type, const std::function<void(GgufEncoder&)>& value) {
    kv_.Str(key, GgufFieldKind::kKeyLength);
    kv_.Type(type, key);
    value(kv_);
    ++kv_count_;
  }
  template <typename T>
  void Scalar(const std::string& key, GgufType type, T v) {
    Kv(key, type, [v](GgufEncoder& e) { e.Raw(v); });
  }
  void U32(const std::string& key, uint32_t v) { Scalar(key, GgufType::kU32, v); }
  void I32(const std::string& key, int32_t v) { Scalar(key, GgufType::kI32, v); }
  void U64(const std::string& key, uint64_t v) { Scalar(key, GgufType::kU64, v); }
  void F32(const std::string& key, float v) { Scalar(key, GgufType::kF32, v); }
  void Bool(const std::string& key, bool v) { Scalar(key, GgufType::kBool, static_cast<uint8_t>(v)); }
  void String(const std::string& key, const std::string& v) {
    Kv(key, GgufType::kString, [&v](GgufEncoder& e) { e.Str(v); });
  }
  template <typename T>
  void Array(const std::string& key, GgufType elem, const std::vector<T>& values) {
    Kv(key, GgufType::kArray, [&](GgufEncoder& e) {
      e.ArrayHeader(elem, values.size(), key);
      for (const T& v : values) e.Raw(v);
    });
  }
  void StringArray(const std::string& key, const std::vector<std::string>& values) {
    Kv(key, GgufType::kArray, [&](GgufEncoder& e) {
      e.ArrayHeader(GgufType::kString, values.size(), key);
      for (const std::string& v : values) e.Str(v);
    });
  }

  // A tensor with raw bytes; `dims` innermost first (GGUF order).
  void Tensor(const std::string& name, uint32_t ggml_type, std::vector<uint64_t> dims, std::vector<uint8_t> data) {
    tensors_.push_back({name, ggml_type, std::move(dims), std::move(data)});
  }
  // A tensor of F32, F16 or BF16 from float values.
  void FloatTensor(const std::string& name, DType dtype, std::vector<uint64_t> dims, const std::vector<float>& v) {
    std::vector<uint8_t> data;
    for (float f : v) {
      if (dtype == DType::kF32) {
        uint8_t b[4];
        std::memcpy(b, &f, 4);
        data.insert(data.end(), b, b + 4);
      } else {
        const uint16_t h = dtype == DType::kF16 ? TestF32ToF16(f) : F32ToBF16(f);
        data.push_back(static_cast<uint8_t>(h & 0xff));
        data.push_back(static_cast<uint8_t>(h >> 8));
      }
    }
    const uint32_t type = dtype == DType::kF32 ? kGgmlTypeF32 : dtype == DType::kF16 ? kGgmlTypeF16 : kGgmlTypeBF16;
    Tensor(name, type, std::move(dims), std::move(data));
  }

  // The finished file. `fields` have absolute offsets; the last tensor ends at EOF.
  struct Built {
    std::vector<uint8_t> bytes;
    std::vector<GgufFieldLoc> fields;
    size_t tensor_info_end = 0;  // first byte after the tensor infos
    size_t data_offset = 0;      // start of the data section
  };
  Built Build() const {
    GgufEncoder e;
    e.Field(GgufFieldKind::kMagic, uint32_t{0x46554747}, "magic");
    e.Field(GgufFieldKind::kVersion, version_, "version");
    e.Field(GgufFieldKind::kTensorCount, static_cast<uint64_t>(tensors_.size()), "tensor_count");
    e.Field(GgufFieldKind::kKvCount, kv_count_, "kv_count");
    e.Append(kv_);
    std::vector<uint64_t> offsets;
    uint64_t off = 0;
    for (const auto& t : tensors_) {
      off = (off + alignment - 1) / alignment * alignment;
      offsets.push_back(off);
      off += t.data.size();
    }
    for (size_t k = 0; k < tensors_.size(); ++k) {
      const auto& t = tensors_[k];
      e.Str(t.name, GgufFieldKind::kTensorNameLength);
      e.Field(GgufFieldKind::kNDims, static_cast<uint32_t>(t.dims.size()), t.name);
      for (uint64_t d : t.dims) e.Field(GgufFieldKind::kDim, d, t.name);
      e.Field(GgufFieldKind::kTensorType, t.type, t.name);
      e.Field(GgufFieldKind::kTensorOffset, offsets[k], t.name);
    }
    Built b;
    b.tensor_info_end = e.bytes.size();
    if (!tensors_.empty()) {
      b.data_offset = (e.bytes.size() + alignment - 1) / alignment * alignment;
      e.bytes.resize(b.data_offset, 0);
      for (size_t k = 0; k < tensors_.size(); ++k) {
        e.bytes.resize(b.data_offset + offsets[k], 0);
        e.bytes.insert(e.bytes.end(), tensors_[k].data.begin(), tensors_[k].data.end());
      }
    }
    b.bytes = std::move(e.bytes);
    b.fields = std::move(e.fields);
    return b;
  }

 private:
  struct PendingTensor {
    std::string name;
    uint32_t type;
    std::vector<uint64_t> dims;
    std::vector<uint8_t> data;
  };
  uint32_t version_;
  uint64_t kv_count_ = 0;
  GgufEncoder kv_;
  std::vector<PendingTensor> tensors_;
};

// Writes `w` to `name` in the scratch directory ScratchDir(`dir`); returns the path.
inline std::string WriteGgufToScratch(const GgufWriter& w, const std::string& dir, const std::string& name) {
  const std::string path = ScratchDir(dir) + "/" + name;
  const auto bytes = w.Build().bytes;
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return path;
}

}  // namespace llmserve::testing
