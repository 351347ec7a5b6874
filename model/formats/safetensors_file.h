// One memory-mapped `.safetensors` file: header parsing and validated tensor views.
//
// Layout:  [u64 LE N][N bytes of JSON header][data ...]
// The header maps tensor name -> {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets relative to the start of the data, i.e. byte 8 + N), plus an optional
// "__metadata__" object of strings.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/dtype.h"
#include "model/mapped_file.h"
#include "model/model_weights.h"

namespace llmserve {

// One tensor entry of a safetensors header. Offsets and sizes are already checked.
struct SafetensorsEntry {
  std::string name;
  std::string dtype_name;       // as written in the file: "F32", "BF16", "I64", ...
  std::optional<DType> dtype;   // nullopt: a dtype we cannot compute with
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
};

// A parsed safetensors file; immutable and thread-safe once opened.
class SafetensorsFile {
 public:
  // Maps and parses `path`; INVALID_ARGUMENT naming the file on any malformed header.
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);

  // The file path given to Open.
  const std::string& path() const { return file_->path(); }

  // The mapping that backs every entry's data.
  const std::shared_ptr<MappedFile>& file() const { return file_; }

  // All tensor entries by name (unsupported dtypes included).
  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }

  // "__metadata__" string values (non-string values are skipped).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // nullptr when absent.
  const SafetensorsEntry* Find(const std::string& name) const;

  // A TensorView of `entry` named `view_name`; UNIMPLEMENTED for an unsupported dtype.
  absl::StatusOr<TensorView> View(const SafetensorsEntry& entry, const std::string& view_name) const;

 private:
  explicit SafetensorsFile(std::shared_ptr<MappedFile> file) : file_(std::move(file)) {}
  absl::Status Parse();

  std::shared_ptr<MappedFile> file_;
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

// Element size of a safetensors dtype string ("F32" -> 4), or 0 when unknown.
size_t SafetensorsDTypeSize(const std::string& dtype_name);

}  // namespace llmserve
