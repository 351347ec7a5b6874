#include "model/model_loader.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "model/formats/gguf_model.h"
#include "model/formats/hf_model.h"
#include "model/formats/llama2c_model.h"

namespace llmserve {

absl::StatusOr<ModelFormat> DetectModelFormat(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return absl::NotFoundError(absl::StrCat(path, ": no such file or directory"));
  if (fs::is_directory(st)) {
    if (fs::exists(fs::path(path) / "config.json", ec)) return ModelFormat::kHuggingFace;
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": directory has no config.json (expected a HuggingFace model directory)"));
  }
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  if (in.read(magic, 4) && std::string_view(magic, 4) == "GGUF") return ModelFormat::kGguf;
  return ModelFormat::kLlama2c;
}

absl::StatusOr<std::unique_ptr<ModelWeights>> LoadModel(const std::string& path) {
  absl::StatusOr<ModelFormat> format = DetectModelFormat(path);
  if (!format.ok()) return format.status();
  switch (*format) {
    case ModelFormat::kLlama2c: return LoadLlama2cModel(path);
    case ModelFormat::kGguf: return LoadGgufModel(path);
    case ModelFormat::kHuggingFace: return LoadHfModel(path);
  }
  return absl::InternalError("unreachable");
}

}  // namespace llmserve
