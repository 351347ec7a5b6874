#include "model/model_loader.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
  if (!fs::is_regular_file(st)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a regular file (a model is a .gguf file, a llama2.c .bin checkpoint or a HuggingFace "
              "directory)"));
  }
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  const std::streamsize got = in.gcount();
  if (got == 4 && std::string_view(magic, 4) == "GGUF") return ModelFormat::kGguf;
  const absl::Status llama2c = ProbeLlama2cModel(path);
  if (llama2c.ok()) return ModelFormat::kLlama2c;
  std::string start;
  for (std::streamsize i = 0; i < got; ++i) absl::StrAppendFormat(&start, "%s%02x", i ? " " : "", static_cast<uint8_t>(magic[i]));
  return absl::InvalidArgumentError(absl::StrCat(
      path, " is not a model file llmserve reads: not GGUF (it starts with ",
      got == 0 ? std::string("nothing: the file is empty") : absl::StrCat("bytes ", start), ", not \"GGUF\"), not a "
      "llama2.c checkpoint (", llama2c.message(), "), not a HuggingFace directory"));
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
