#include "model/formats/gguf_file.h"

#include <cstring>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "model/byte_reader.h"
#include "model/checked_math.h"

namespace llmserve {
namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;
// Nested arrays are rare (llama.cpp writes none); cap them so that a file full of
// 12-byte empty arrays cannot turn into an outsized tree of GgufValue objects.
constexpr uint64_t kMaxNestedArrays = uint64_t{1} << 16;
// Fewest bytes of one key/value pair and one tensor info, for count sanity checks.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 4 + 8;

// Reads the key/value and tensor-info sections with a bounds-checked reader.
class Parser {
 public:
  Parser(std::span<const uint8_t> bytes, const std::string& source) : r_(bytes, source) {}

  ByteReader& reader() { return r_; }

  absl::Status ReadString(std::string* out, absl::string_view what) {
    uint64_t len = 0;
    if (absl::Status s = r_.Read(&len, what); !s.ok()) return s;
    std::string_view bytes;
    if (absl::Status s = r_.ReadBytes(len, &bytes, what); !s.ok()) return s;
    out->assign(bytes.data(), bytes.size());
    return absl::OkStatus();
  }

  absl::Status ReadType(GgufType* out, absl::string_view what) {
    uint32_t t = 0;
    if (absl::Status s = r_.Read(&t, what); !s.ok()) return s;
    if (!IsValidGgufType(t)) return r_.Error(absl::StrCat("unknown value type ", t, " for ", what));
    *out = static_cast<GgufType>(t);
    return absl::OkStatus();
  }

  // Reads one value of `type` into `out` (for arrays: with nesting `depth`).
  absl::Status ReadValue(GgufType type, GgufValue* out, int depth, absl::string_view what) {
    out->type = type;
    switch (type) {
      case GgufType::kU8: return ReadScalar<uint8_t>(&out->u, what);
      case GgufType::kU16: return ReadScalar<uint16_t>(&out->u, what);
      case GgufType::kU32: return ReadScalar<uint32_t>(&out->u, what);
      case GgufType::kU64: return ReadScalar<uint64_t>(&out->u, what);
      case GgufType::kI8: return ReadScalar<int8_t>(&out->i, what);
      case GgufType::kI16: return ReadScalar<int16_t>(&out->i, what);
      case GgufType::kI32: return ReadScalar<int32_t>(&out->i, what);
      case GgufType::kI64: return ReadScalar<int64_t>(&out->i, what);
      case GgufType::kF32: return ReadScalar<float>(&out->f, what);
      case GgufType::kF64: return ReadScalar<double>(&out->f, what);
      case GgufType::kBool: {
        int64_t b = 0;
        if (absl::Status s = ReadBool(&b, what); !s.ok()) return s;
        out->u = static_cast<uint64_t>(b);
        return absl::OkStatus();
      }
      case GgufType::kString: return ReadString(&out->str, what);
      case GgufType::kArray: return ReadArray(out, depth, what);
    }
    return r_.Error(absl::StrCat("unknown value type for ", what));
  }

 private:
  template <typename T, typename Out>
  absl::Status ReadScalar(Out* out, absl::string_view what) {
    T v{};
    if (absl::Status s = r_.Read(&v, what); !s.ok()) return s;
    *out = static_cast<Out>(v);
    return absl::OkStatus();
  }

  absl::Status ReadBool(int64_t* out, absl::string_view what) {
    uint8_t b = 0;
    if (absl::Status s = r_.Read(&b, what); !s.ok()) return s;
    if (b > 1) return r_.Error(absl::StrCat("bool value ", b, " for ", what, " is neither 0 nor 1"));
    *out = b;
    return absl::OkStatus();
  }

  template <typename T, typename Vec>
  absl::Status ReadElements(uint64_t count, Vec* out, absl::string_view what) {
    out->reserve(count);  // count * sizeof(T) <= remaining bytes was checked by the caller
    for (uint64_t k = 0; k < count; ++k) {
      T v{};
      if (absl::Status s = r_.Read(&v, what); !s.ok()) return s;
      out->push_back(static_cast<typename Vec::value_type>(v));
    }
    return absl::OkStatus();
  }

  absl::Status ReadArray(GgufValue* out, int depth, absl::string_view what) {
    if (depth >= kGgufMaxArrayDepth) {
      return r_.Error(absl::StrCat(what, ": arrays nested more than ", kGgufMaxArrayDepth, " deep"));
    }
    GgufType elem = GgufType::kU8;
    if (absl::Status s = ReadType(&elem, absl::StrCat(what, " element type")); !s.ok()) return s;
    uint64_t count = 0;
    if (absl::Status s = r_.Read(&count, absl::StrCat(what, " element count")); !s.ok()) return s;
    const uint64_t min_size = GgufMinEncodedSize(elem);
    if (count > r_.remaining() / min_size) {
      return r_.Error(absl::StrCat(what, ": array of ", count, " ", GgufTypeName(elem), " elements needs at least ",
                                   min_size, " bytes each, only ", r_.remaining(), " bytes left"));
    }
    out->elem_type = elem;
    const std::string elem_what = absl::StrCat(what, " element");
    switch (elem) {
      case GgufType::kU8: return ReadElements<uint8_t>(count, &out->ints, elem_what);
      case GgufType::kI8: return ReadElements<int8_t>(count, &out->ints, elem_what);
      case GgufType::kU16: return ReadElements<uint16_t>(count, &out->ints, elem_what);
      case GgufType::kI16: return ReadElements<int16_t>(count, &out->ints, elem_what);
      case GgufType::kU32: return ReadElements<uint32_t>(count, &out->ints, elem_what);
      case GgufType::kI32: return ReadElements<int32_t>(count, &out->ints, elem_what);
      case GgufType::kU64: return ReadElements<uint64_t>(count, &out->ints, elem_what);
      case GgufType::kI64: return ReadElements<int64_t>(count, &out->ints, elem_what);
      case GgufType::kF32: return ReadElements<float>(count, &out->f32s, elem_what);
      case GgufType::kF64: return ReadElements<double>(count, &out->f64s, elem_what);
      case GgufType::kBool: {
        out->ints.reserve(count);
        for (uint64_t k = 0; k < count; ++k) {
          int64_t b = 0;
          if (absl::Status s = ReadBool(&b, elem_what); !s.ok()) return s;
          out->ints.push_back(b);
        }
        return absl::OkStatus();
      }
      case GgufType::kString: {
        out->strs.reserve(count);
        for (uint64_t k = 0; k < count; ++k) {
          out->strs.emplace_back();
          if (absl::Status s = ReadString(&out->strs.back(), elem_what); !s.ok()) return s;
        }
        return absl::OkStatus();
      }
      case GgufType::kArray: {
        // No reserve: elements are far larger in memory than their 12-byte minimum.
        for (uint64_t k = 0; k < count; ++k) {
          if (++nested_arrays_ > kMaxNestedArrays) {
            return r_.Error(absl::StrCat(what, ": more than ", kMaxNestedArrays, " nested arrays in the file"));
          }
          out->arrays.emplace_back();
          if (absl::Status s = ReadValue(GgufType::kArray, &out->arrays.back(), depth + 1, elem_what); !s.ok()) {
            return s;
          }
        }
        return absl::OkStatus();
      }
    }
    return r_.Error(absl::StrCat("unknown element type for ", what));
  }

  ByteReader r_;
  uint64_t nested_arrays_ = 0;
};

absl::Status FileError(const std::string& path, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", message));
}

}  // namespace

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  auto file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  return Parse(*std::move(file));
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Parse(std::shared_ptr<MappedFile> file) {
  std::unique_ptr<GgufFile> g(new GgufFile());
  g->path_ = file->path();
  g->file_ = std::move(file);
  if (absl::Status s = g->ParseAll(g->file_->bytes()); !s.ok()) return s;
  return g;
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::ParseBytes(std::span<const uint8_t> bytes, std::string source) {
  std::unique_ptr<GgufFile> g(new GgufFile());
  g->path_ = std::move(source);
  if (absl::Status s = g->ParseAll(bytes); !s.ok()) return s;
  return g;
}

absl::Status GgufFile::ParseAll(std::span<const uint8_t> bytes) {
  Parser p(bytes, path_);
  ByteReader& r = p.reader();

  // ---- Header.
  uint32_t magic = 0;
  if (absl::Status s = r.Read(&magic, "magic"); !s.ok()) return s;
  if (magic != kGgufMagic) {
    return r.Error(absl::StrFormat("not a GGUF file: bad magic 0x%08x (expected \"GGUF\")", magic));
  }
  if (absl::Status s = r.Read(&version_, "version"); !s.ok()) return s;
  if (version_ == 1) {
    return absl::UnimplementedError(absl::StrCat(
        path_, ": GGUF version 1 is not supported (it used 32-bit counts); re-convert the model to GGUF v3"));
  }
  if (version_ == 0x02000000u || version_ == 0x03000000u) {
    return absl::UnimplementedError(absl::StrCat(path_, ": big-endian GGUF files are not supported"));
  }
  if (version_ != 2 && version_ != 3) {
    return r.Error(absl::StrCat("unsupported GGUF version ", version_, " (only versions 2 and 3 are supported)"));
  }
  uint64_t tensor_count = 0, kv_count = 0;
  if (absl::Status s = r.Read(&tensor_count, "tensor count"); !s.ok()) return s;
  if (absl::Status s = r.Read(&kv_count, "metadata key/value count"); !s.ok()) return s;
  if (kv_count > r.remaining() / kMinKvBytes) {
    return r.Error(absl::StrCat("metadata count ", kv_count, " cannot fit in the ", r.remaining(),
                                " bytes left in the file"));
  }
  if (tensor_count > r.remaining() / kMinTensorInfoBytes) {
    return r.Error(absl::StrCat("tensor count ", tensor_count, " cannot fit in the ", r.remaining(),
                                " bytes left in the file"));
  }

  // ---- Metadata.
  key_order_.reserve(kv_count);
  for (uint64_t k = 0; k < kv_count; ++k) {
    std::string key;
    if (absl::Status s = p.ReadString(&key, absl::StrCat("metadata key #", k)); !s.ok()) return s;
    if (key.empty()) return r.Error(absl::StrCat("metadata key #", k, " is empty"));
    if (metadata_.count(key) != 0) return r.Error(absl::StrCat("duplicate metadata key '", key, "'"));
    const std::string what = absl::StrCat("metadata '", key, "'");
    GgufType type = GgufType::kU8;
    if (absl::Status s = p.ReadType(&type, absl::StrCat(what, " type")); !s.ok()) return s;
    GgufValue value;
    if (absl::Status s = p.ReadValue(type, &value, 0, what); !s.ok()) return s;
    metadata_.emplace(key, std::move(value));
    key_order_.push_back(std::move(key));
  }

  if (const GgufValue* a = Find("general.alignment")) {
    if (!IsGgufIntegerType(a->type)) {
      return FileError(path_, absl::StrCat("general.alignment has type ", GgufTypeName(a->type),
                                           ", expected an integer"));
    }
    auto v = GetInt("general.alignment");
    if (!v.ok()) return v.status();
    if (*v <= 0 || (*v & (*v - 1)) != 0 || static_cast<uint64_t>(*v) > kGgufMaxAlignment) {
      return FileError(path_, absl::StrCat("general.alignment ", *v, " is not a power of two in [1, ",
                                           kGgufMaxAlignment, "]"));
    }
    alignment_ = static_cast<uint64_t>(*v);
  } else {
    alignment_ = kDefaultAlignment;
  }

  // ---- Tensor infos.
  tensors_.reserve(tensor_count);
  for (uint64_t k = 0; k < tensor_count; ++k) {
    GgufTensorInfo t;
    if (absl::Status s = p.ReadString(&t.name, absl::StrCat("tensor #", k, " name")); !s.ok()) return s;
    if (t.name.empty()) return r.Error(absl::StrCat("tensor #", k, " has an empty name"));
    const std::string what = absl::StrCat("tensor '", t.name, "'");
    if (tensor_index_.count(t.name) != 0) return r.Error(absl::StrCat("duplicate ", what));
    uint32_t n_dims = 0;
    if (absl::Status s = r.Read(&n_dims, absl::StrCat(what, " dimension count")); !s.ok()) return s;
    if (n_dims > kMaxDims) {
      return r.Error(absl::StrCat(what, " has ", n_dims, " dimensions (at most ", kMaxDims, " allowed)"));
    }
    uint64_t dims[kMaxDims] = {1, 1, 1, 1};
    for (uint32_t d = 0; d < n_dims; ++d) {
      if (absl::Status s = r.Read(&dims[d], absl::StrCat(what, " dimension")); !s.ok()) return s;
      if (dims[d] > static_cast<uint64_t>(INT64_MAX)) {
        return r.Error(absl::StrCat(what, " dimension ", d, " = ", dims[d], " is too large"));
      }
    }
    uint64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      auto m = CheckedMul(numel, dims[d]);
      if (!m || *m > static_cast<uint64_t>(INT64_MAX)) {
        return r.Error(absl::StrCat(what, " dimensions [", absl::StrJoin(std::span(dims, n_dims), ", "),
                                    "] overflow the element count"));
      }
      numel = *m;
    }
    if (absl::Status s = r.Read(&t.ggml_type, absl::StrCat(what, " type")); !s.ok()) return s;
    auto traits = GgmlTypeInfo(t.ggml_type);
    if (!traits) return r.Error(absl::StrCat(what, " has unknown GGML type ", t.ggml_type));
    if (dims[0] % traits->block_size != 0) {
      return r.Error(absl::StrCat(what, " of type ", traits->name, ": row length ", dims[0],
                                  " is not a multiple of the block size ", traits->block_size));
    }
    auto nbytes = CheckedMul(numel / traits->block_size, traits->type_size);
    if (!nbytes) return r.Error(absl::StrCat(what, ": byte size overflows"));
    t.nbytes = *nbytes;
    if (absl::Status s = r.Read(&t.offset, absl::StrCat(what, " offset")); !s.ok()) return s;
    for (uint32_t d = n_dims; d > 0; --d) t.shape.push_back(static_cast<int64_t>(dims[d - 1]));
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  // ---- Data section: starts at the next multiple of the alignment.
  const uint64_t end_of_infos = r.position();
  data_offset_ = (end_of_infos + alignment_ - 1) / alignment_ * alignment_;  // no overflow: both small
  for (GgufTensorInfo& t : tensors_) {
    if (t.offset % alignment_ != 0) {
      return FileError(path_, absl::StrCat("tensor '", t.name, "' offset ", t.offset,
                                           " is not a multiple of the alignment ", alignment_));
    }
    auto begin = CheckedAdd(data_offset_, t.offset);
    auto end = begin ? CheckedAdd(*begin, t.nbytes) : std::nullopt;
    if (!end || *end > bytes.size()) {
      return FileError(path_, absl::StrCat("tensor '", t.name, "' (", t.nbytes, " bytes at data offset ", t.offset,
                                           ") extends past the end of the file (", bytes.size(), " bytes, data at ",
                                           data_offset_, ")"));
    }
    t.data = t.nbytes == 0 ? nullptr : bytes.data() + *begin;
  }
  // ggml's writer lays the tensors out in header order, each at the previous one's end
  // rounded up to the alignment, and ggml's reader requires exactly that: any other offset
  // means a tensor's type and shape do not match the bytes the file gave it.
  uint64_t expected = 0;
  for (const GgufTensorInfo& t : tensors_) {
    if (t.offset != expected) {
      return FileError(path_, absl::StrCat("tensor '", t.name, "' has data offset ", t.offset, ", expected ", expected,
                                           " (the previous tensor's end): a tensor's size does not match its type ",
                                           "and shape"));
    }
    expected += (t.nbytes + alignment_ - 1) / alignment_ * alignment_;  // no overflow: each ends inside the file
  }
  return absl::OkStatus();
}

const GgufValue* GgufFile::Find(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::FindTensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

absl::StatusOr<TensorView> GgufFile::View(const GgufTensorInfo& t) const {
  std::optional<DType> dtype = GgmlTypeToDType(t.ggml_type);
  std::optional<QuantType> quant = QuantTypeFromGgml(t.ggml_type);
  if (!dtype && !quant) {
    return absl::UnimplementedError(absl::StrCat(
        path_, ": tensor ", t.name, " has type ", GgmlTypeName(t.ggml_type), " (", t.ggml_type,
        "): supported are F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K"));
  }
  TensorView v;
  v.name = t.name;
  if (dtype) v.dtype = *dtype;
  if (quant) v.quant = *quant;
  v.shape = t.shape;
  v.data = t.data;
  v.nbytes = t.nbytes;
  return v;
}

}  // namespace llmserve
