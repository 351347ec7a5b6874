// GgufFile: a parsed GGUF v2/v3 file (llama.cpp's model format), memory-mapped.
//
// Layout (all little-endian):
//   "GGUF"  u32 version  u64 tensor_count  u64 kv_count
//   kv_count x { string key, u32 value_type, value }
//   tensor_count x { string name, u32 n_dims, n_dims x u64 dim (innermost first),
//                    u32 ggml_type, u64 offset (relative to the data section) }
//   padding to general.alignment (default 32)
//   data section: each tensor at data_start + offset (offset a multiple of the alignment)
// string = u64 length + bytes; array = u32 element type + u64 count + elements.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "model/formats/gguf_types.h"
#include "model/mapped_file.h"
#include "model/model_weights.h"

namespace llmserve {

// One metadata value. Scalars use one field per family; an array keeps its elements in
// the single vector that matches `elem_type` (compact for 100k-entry vocabularies).
struct GgufValue {
  GgufType type = GgufType::kU8;
  int64_t i = 0;     // i8/i16/i32/i64 scalars
  uint64_t u = 0;    // u8/u16/u32/u64 scalars; bool as 0/1
  double f = 0.0;    // f32/f64 scalars
  std::string str;   // string scalars

  GgufType elem_type = GgufType::kU8;  // arrays only
  std::vector<int64_t> ints;           // integer and bool elements (u64: bit pattern)
  std::vector<float> f32s;             // f32 elements
  std::vector<double> f64s;            // f64 elements
  std::vector<std::string> strs;       // string elements
  std::vector<GgufValue> arrays;       // nested array elements

  // Number of array elements (0 for scalars).
  uint64_t size() const;

  // Short human-readable rendering ("u32 4096", "array<string>[32000]").
  std::string DebugString() const;
};

// One tensor's header entry, already checked against the file.
struct GgufTensorInfo {
  std::string name;
  uint32_t ggml_type = 0;        // GGML type id (see gguf_types.h)
  std::vector<int64_t> shape;    // outermost first: the reverse of the file's dims
  uint64_t offset = 0;           // relative to the data section
  uint64_t nbytes = 0;           // storage size
  const uint8_t* data = nullptr; // into the file bytes
};

// Maximum nesting of arrays inside arrays.
inline constexpr int kGgufMaxArrayDepth = 8;
// Largest accepted general.alignment.
inline constexpr uint64_t kGgufMaxAlignment = uint64_t{1} << 20;

// A parsed GGUF file; immutable and thread-safe once built.
class GgufFile {
 public:
  // Maps and parses `path`. NOT_FOUND if missing; INVALID_ARGUMENT naming the file and
  // offset for any malformed content; UNIMPLEMENTED for GGUF v1 and big-endian files.
  static absl::StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);

  // Parses an already-mapped file (kept alive by the result).
  static absl::StatusOr<std::unique_ptr<GgufFile>> Parse(std::shared_ptr<MappedFile> file);

  // Parses `bytes`, which the caller keeps alive (and unchanged) as long as the result
  // and any views into it live. `source` names the bytes in messages.
  static absl::StatusOr<std::unique_ptr<GgufFile>> ParseBytes(std::span<const uint8_t> bytes,
                                                              std::string source);

  // The file path (or source name).
  const std::string& path() const { return path_; }
  // 2 or 3.
  uint32_t version() const { return version_; }
  // general.alignment or 32.
  uint64_t alignment() const { return alignment_; }
  // Absolute offset of the data section.
  uint64_t data_offset() const { return data_offset_; }
  // The mapping behind the data (null when parsed from caller-owned bytes).
  const std::shared_ptr<MappedFile>& mapped_file() const { return file_; }

  // All metadata, sorted by key.
  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  // Metadata keys in file order.
  const std::vector<std::string>& key_order() const { return key_order_; }
  // Tensor infos in file order.
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  // nullptr when absent.
  const GgufValue* Find(const std::string& key) const;
  // nullptr when absent.
  const GgufTensorInfo* FindTensor(const std::string& name) const;

  // The value of `key` if it has exactly `type`: NOT_FOUND if missing, INVALID_ARGUMENT otherwise.
  absl::StatusOr<const GgufValue*> Get(const std::string& key, GgufType type) const;
  // A string value.
  absl::StatusOr<std::string> GetString(const std::string& key) const;
  // Any integer type, as int64 (INVALID_ARGUMENT for a u64 above INT64_MAX).
  absl::StatusOr<int64_t> GetInt(const std::string& key) const;
  // f32 or f64.
  absl::StatusOr<double> GetFloat(const std::string& key) const;
  // A bool.
  absl::StatusOr<bool> GetBool(const std::string& key) const;
  // An array of strings.
  absl::StatusOr<absl::Span<const std::string>> GetStringArray(const std::string& key) const;
  // An array of f32 or f64, as floats.
  absl::StatusOr<std::vector<float>> GetFloatArray(const std::string& key) const;
  // An array of any integer type, as int64.
  absl::StatusOr<std::vector<int64_t>> GetIntArray(const std::string& key) const;

  // Like the getters above, but `fallback` when the key is absent (a wrong type still fails).
  absl::StatusOr<std::string> GetStringOr(const std::string& key, const std::string& fallback) const;
  // See GetStringOr.
  absl::StatusOr<int64_t> GetIntOr(const std::string& key, int64_t fallback) const;
  // See GetStringOr.
  absl::StatusOr<double> GetFloatOr(const std::string& key, double fallback) const;
  // See GetStringOr.
  absl::StatusOr<bool> GetBoolOr(const std::string& key, bool fallback) const;

  // A TensorView (named as in the file) of an F32/F16/BF16 tensor or of a quantized one
  // llmserve computes with (quant_type.h); UNIMPLEMENTED naming the tensor and its type
  // ("tensor X has type IQ2_XS (17): supported are ...") for the other types.
  absl::StatusOr<TensorView> View(const GgufTensorInfo& tensor) const;

 private:
  GgufFile() = default;
  absl::Status ParseAll(std::span<const uint8_t> bytes);

  std::string path_;
  std::shared_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::map<std::string, GgufValue> metadata_;
  std::vector<std::string> key_order_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

}  // namespace llmserve
