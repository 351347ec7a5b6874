// GgufValue helpers and GgufFile's typed metadata getters.
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "model/formats/gguf_file.h"

namespace llmserve {
namespace {

bool IsSigned(GgufType t) {
  return t == GgufType::kI8 || t == GgufType::kI16 || t == GgufType::kI32 || t == GgufType::kI64;
}

}  // namespace

uint64_t GgufValue::size() const {
  if (type != GgufType::kArray) return 0;
  switch (elem_type) {
    case GgufType::kF32: return f32s.size();
    case GgufType::kF64: return f64s.size();
    case GgufType::kString: return strs.size();
    case GgufType::kArray: return arrays.size();
    default: return ints.size();
  }
}

std::string GgufValue::DebugString() const {
  switch (type) {
    case GgufType::kBool: return u != 0 ? "bool true" : "bool false";
    case GgufType::kString: {
      std::string s = str.size() > 60 ? absl::StrCat(str.substr(0, 60), "...") : str;
      return absl::StrCat("string \"", s, "\"");
    }
    case GgufType::kF32:
    case GgufType::kF64: return absl::StrCat(GgufTypeName(type), " ", f);
    case GgufType::kArray: return absl::StrCat("array<", GgufTypeName(elem_type), ">[", size(), "]");
    default:
      return IsSigned(type) ? absl::StrCat(GgufTypeName(type), " ", i) : absl::StrCat(GgufTypeName(type), " ", u);
  }
}

absl::StatusOr<const GgufValue*> GgufFile::Get(const std::string& key, GgufType type) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return absl::NotFoundError(absl::StrCat(path_, ": metadata key '", key, "' is missing"));
  if (v->type != type) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": metadata '", key, "' has type ",
                                                   v->type == GgufType::kArray ? v->DebugString() : GgufTypeName(v->type),
                                                   ", expected ", GgufTypeName(type)));
  }
  return v;
}

absl::StatusOr<std::string> GgufFile::GetString(const std::string& key) const {
  auto v = Get(key, GgufType::kString);
  if (!v.ok()) return v.status();
  return (*v)->str;
}

absl::StatusOr<int64_t> GgufFile::GetInt(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return absl::NotFoundError(absl::StrCat(path_, ": metadata key '", key, "' is missing"));
  if (!IsGgufIntegerType(v->type)) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": metadata '", key, "' is ", v->DebugString(),
                                                   ", expected an integer"));
  }
  if (IsSigned(v->type)) return v->i;
  if (v->u > static_cast<uint64_t>(INT64_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": metadata '", key, "' = ", v->u, " is out of range"));
  }
  return static_cast<int64_t>(v->u);
}

absl::StatusOr<double> GgufFile::GetFloat(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return absl::NotFoundError(absl::StrCat(path_, ": metadata key '", key, "' is missing"));
  if (v->type != GgufType::kF32 && v->type != GgufType::kF64) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": metadata '", key, "' is ", v->DebugString(),
                                                   ", expected f32 or f64"));
  }
  return v->f;
}

absl::StatusOr<bool> GgufFile::GetBool(const std::string& key) const {
  auto v = Get(key, GgufType::kBool);
  if (!v.ok()) return v.status();
  return (*v)->u != 0;
}

absl::StatusOr<absl::Span<const std::string>> GgufFile::GetStringArray(const std::string& key) const {
  auto v = Get(key, GgufType::kArray);
  if (!v.ok()) return v.status();
  if ((*v)->elem_type != GgufType::kString) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": metadata '", key, "' is ", (*v)->DebugString(),
                                                   ", expected an array of strings"));
  }
  return absl::Span<const std::string>((*v)->strs);
}

absl::StatusOr<std::vector<float>> GgufFile::GetFloatArray(const std::string& key) const {
  auto v = Get(key, GgufType::kArray);
  if (!v.ok()) return v.status();
  if ((*v)->elem_type == GgufType::kF32) return (*v)->f32s;
  if ((*v)->elem_type == GgufType::kF64) return std::vector<float>((*v)->f64s.begin(), (*v)->f64s.end());
  return absl::InvalidArgumentError(absl::StrCat(path_, ": metadata '", key, "' is ", (*v)->DebugString(),
                                                 ", expected an array of f32"));
}

absl::StatusOr<std::vector<int64_t>> GgufFile::GetIntArray(const std::string& key) const {
  auto v = Get(key, GgufType::kArray);
  if (!v.ok()) return v.status();
  if (!IsGgufIntegerType((*v)->elem_type)) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": metadata '", key, "' is ", (*v)->DebugString(),
                                                   ", expected an array of integers"));
  }
  if ((*v)->elem_type == GgufType::kU64) {
    for (size_t k = 0; k < (*v)->ints.size(); ++k) {
      if ((*v)->ints[k] < 0) {
        return absl::InvalidArgumentError(absl::StrCat(path_, ": metadata '", key, "' element ", k, " = ",
                                                       static_cast<uint64_t>((*v)->ints[k]), " is out of range"));
      }
    }
  }
  return (*v)->ints;
}

absl::StatusOr<std::string> GgufFile::GetStringOr(const std::string& key, const std::string& fallback) const {
  if (Find(key) == nullptr) return fallback;
  return GetString(key);
}

absl::StatusOr<int64_t> GgufFile::GetIntOr(const std::string& key, int64_t fallback) const {
  if (Find(key) == nullptr) return fallback;
  return GetInt(key);
}

absl::StatusOr<double> GgufFile::GetFloatOr(const std::string& key, double fallback) const {
  if (Find(key) == nullptr) return fallback;
  return GetFloat(key);
}

absl::StatusOr<bool> GgufFile::GetBoolOr(const std::string& key, bool fallback) const {
  if (Find(key) == nullptr) return fallback;
  return GetBool(key);
}

}  // namespace llmserve
