#include "model/formats/safetensors_file.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/checked_math.h"
#include "nlohmann/json.hpp"

namespace llmserve {
namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;  // 100 MiB
constexpr size_t kMaxRank = 8;

// A non-negative JSON integer, or nullopt (negative, float, not a number).
std::optional<uint64_t> AsUnsigned(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

}  // namespace

size_t SafetensorsDTypeSize(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  return 0;
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  auto file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  std::unique_ptr<SafetensorsFile> st(new SafetensorsFile(*std::move(file)));
  if (absl::Status s = st->Parse(); !s.ok()) return s;
  return st;
}

absl::Status SafetensorsFile::Parse() {
  const std::string& path = file_->path();
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
  };
  const uint64_t size = file_->size();
  if (size < 8) return bad(absl::StrCat("truncated safetensors file: ", size, " bytes, need at least 8"));
  uint64_t n;
  std::memcpy(&n, file_->data(), 8);
  if (n > kMaxHeaderBytes) {
    return bad(absl::StrCat("header length ", n, " exceeds the limit of ", kMaxHeaderBytes, " bytes"));
  }
  if (n > size - 8) {
    return bad(absl::StrCat("header length ", n, " runs past the end of the file (", size, " bytes)"));
  }
  const char* hdr = reinterpret_cast<const char*>(file_->data() + 8);
  json root = json::parse(hdr, hdr + n, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return bad("header is not valid JSON");
  if (!root.is_object()) return bad("header is not a JSON object");

  const uint8_t* base = file_->data() + 8 + n;
  const uint64_t data_size = size - 8 - n;
  for (const auto& [name, v] : root.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) return bad("__metadata__ is not an object");
      for (const auto& [k, mv] : v.items()) {
        if (mv.is_string()) metadata_[k] = mv.get<std::string>();
      }
      continue;
    }
    // (A named copy: clang 14 cannot capture a structured binding.)
    auto bad_tensor = [&, &tensor = name](absl::string_view what) {
      return bad(absl::StrCat("tensor \"", tensor, "\": ", what));
    };
    if (!v.is_object()) return bad_tensor("entry is not an object");
    auto dt = v.find("dtype");
    auto sh = v.find("shape");
    auto off = v.find("data_offsets");
    if (dt == v.end() || !dt->is_string()) return bad_tensor("missing or non-string \"dtype\"");
    if (sh == v.end() || !sh->is_array()) return bad_tensor("missing or non-array \"shape\"");
    if (off == v.end() || !off->is_array() || off->size() != 2) {
      return bad_tensor("\"data_offsets\" must be an array [begin, end]");
    }
    SafetensorsEntry e;
    e.name = name;
    e.dtype_name = dt->get<std::string>();
    if (e.dtype_name == "F32") e.dtype = DType::kF32;
    if (e.dtype_name == "F16") e.dtype = DType::kF16;
    if (e.dtype_name == "BF16") e.dtype = DType::kBF16;
    if (sh->size() > kMaxRank) return bad_tensor(absl::StrCat("rank ", sh->size(), " exceeds ", kMaxRank));
    for (const json& d : *sh) {
      auto u = AsUnsigned(d);
      if (!u || *u > (uint64_t{1} << 40)) return bad_tensor("shape entries must be non-negative integers (< 2^40)");
      e.shape.push_back(static_cast<int64_t>(*u));
    }
    auto begin = AsUnsigned((*off)[0]);
    auto end = AsUnsigned((*off)[1]);
    if (!begin || !end) return bad_tensor("data_offsets must be non-negative integers");
    if (*begin > *end) return bad_tensor(absl::StrCat("data_offsets end ", *end, " < begin ", *begin));
    if (*end > data_size) {
      return bad_tensor(absl::StrCat("data_offsets [", *begin, ", ", *end, "] run past the end of the data (",
                                     data_size, " bytes)"));
    }
    const size_t elem = SafetensorsDTypeSize(e.dtype_name);
    if (elem != 0) {  // unknown dtypes are only rejected when a load needs them
      auto numel = CheckedNumel(e.shape);
      auto bytes = numel ? CheckedMul(*numel, elem) : std::nullopt;
      if (!bytes) return bad_tensor("shape overflows");
      if (*bytes != *end - *begin) {
        return bad_tensor(absl::StrCat("data_offsets span ", *end - *begin, " bytes but shape ", ShapeString(e.shape),
                                       " of ", e.dtype_name, " needs ", *bytes));
      }
    }
    e.data = base + *begin;
    e.nbytes = static_cast<size_t>(*end - *begin);
    entries_.emplace(name, std::move(e));
  }
  return absl::OkStatus();
}

const SafetensorsEntry* SafetensorsFile::Find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

absl::StatusOr<TensorView> SafetensorsFile::View(const SafetensorsEntry& e, const std::string& view_name) const {
  if (!e.dtype) {
    return absl::UnimplementedError(absl::StrCat(path(), ": tensor \"", e.name, "\" has dtype ", e.dtype_name,
                                                 "; only F32, F16 and BF16 are supported"));
  }
  TensorView t;
  t.name = view_name;
  t.dtype = *e.dtype;
  t.shape = e.shape;
  t.data = e.data;
  t.nbytes = e.nbytes;
  return t;
}

}  // namespace llmserve
