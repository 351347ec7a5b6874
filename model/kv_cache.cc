#include "model/kv_cache.h"

// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized where their intrinsics are
// inlined (GCC bug 105593); the diagnostic state applies to the header text.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "model/checked_math.h"

namespace llmserve {

namespace {

// Refuse caches beyond this outright (a typo in a byte budget, not a real machine).
constexpr uint64_t kMaxCacheBytes = uint64_t{1} << 40;  // 1 TiB
constexpr int64_t kMaxBlockSize = 1024;
constexpr int64_t kMaxDim = int64_t{1} << 20;  // layers, heads, head_dim: each far below

// Bytes of one head's run in one block, or nullopt if the geometry overflows. A bf16 run
// holds an even number of token slots (V is stored in token pairs).
std::optional<uint64_t> HeadBytes(const KvCacheConfig& c) {
  const int64_t slots = c.dtype == DType::kBF16 ? (c.block_size + 1) / 2 * 2 : c.block_size;
  auto n = CheckedMul(static_cast<uint64_t>(slots), static_cast<uint64_t>(c.head_dim));
  if (!n) return std::nullopt;
  return CheckedMul(*n, DTypeSize(c.dtype));
}

// Bytes of one block over all layers, K and V.
std::optional<uint64_t> BlockBytesAllLayers(const KvCacheConfig& c) {
  if (c.num_layers <= 0 || c.num_kv_heads <= 0 || c.head_dim <= 0 || c.block_size <= 0) return std::nullopt;
  auto head = HeadBytes(c);
  if (!head) return std::nullopt;
  auto block = CheckedMul(*head, static_cast<uint64_t>(c.num_kv_heads));
  if (!block) return std::nullopt;
  auto layers = CheckedMul(*block, static_cast<uint64_t>(c.num_layers));
  if (!layers) return std::nullopt;
  return CheckedMul(*layers, 2);
}

uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

// f32 -> bf16, round to nearest even, NaN stays NaN: bit-identical to F32ToBF16
// (including subnormals, unlike vcvtneps2bf16 which flushes them).
__attribute__((target("avx512f,avx512bw,avx512vl"))) void ToBF16Avx512(const float* src, int64_t n, uint16_t* dst) {
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t left = n - i;
    const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
    const __m512 x = _mm512_maskz_loadu_ps(m, src + i);
    const __m512i u = _mm512_castps_si512(x);
    const __m512i hi = _mm512_srli_epi32(u, 16);
    const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    _mm256_mask_storeu_epi16(dst + i, m, _mm512_cvtepi32_epi16(r));
  }
}

void ToBF16(Isa isa, const float* src, int64_t n, uint16_t* dst) {
  if (HasAvx512(isa)) {
    ToBF16Avx512(src, n, dst);
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = F32ToBF16(src[i]);
}

}  // namespace

KvCacheConfig KvCacheConfig::ForModel(const ModelConfig& model, int64_t block_size, DType dtype) {
  KvCacheConfig c;
  c.num_layers = model.num_layers;
  c.num_kv_heads = model.num_kv_heads;
  c.head_dim = model.head_dim;
  c.block_size = block_size;
  c.dtype = dtype;
  return c;
}

size_t KvCacheConfig::BytesPerBlock() const {
  auto b = BlockBytesAllLayers(*this);
  return b ? static_cast<size_t>(*b) : 0;
}

void KvCacheConfig::SetBlocksFromBytes(size_t bytes) {
  const size_t per = BytesPerBlock();
  num_blocks = per == 0 ? 0 : static_cast<int64_t>(std::min<uint64_t>(bytes / per, INT32_MAX));
}

absl::Status KvCacheConfig::Validate() const {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat("KV cache: ", parts...)); };
  if (dtype != DType::kF32 && dtype != DType::kBF16) {
    return bad("dtype must be f32 or bf16, got ", DTypeName(dtype));
  }
  if (num_layers <= 0 || num_layers > kMaxDim) return bad("num_layers must be in [1, ", kMaxDim, "], got ", num_layers);
  if (num_kv_heads <= 0 || num_kv_heads > kMaxDim) {
    return bad("num_kv_heads must be in [1, ", kMaxDim, "], got ", num_kv_heads);
  }
  if (head_dim <= 0 || head_dim > kMaxDim) return bad("head_dim must be in [1, ", kMaxDim, "], got ", head_dim);
  if (dtype == DType::kBF16 && head_dim % 2 != 0) {
    return bad("a bf16 cache needs an even head_dim (K is stored in dim pairs), got ", head_dim);
  }
  if (block_size < 1 || block_size > kMaxBlockSize) {
    return bad("block_size must be in [1, ", kMaxBlockSize, "], got ", block_size);
  }
  if (num_blocks <= 0) {
    return bad("num_blocks must be positive, got ", num_blocks, " (one block takes ", BytesPerBlock(), " bytes)");
  }
  if (num_blocks > INT32_MAX) return bad("num_blocks ", num_blocks, " exceeds 32-bit block ids");
  auto per = BlockBytesAllLayers(*this);
  if (!per) return bad("block size in bytes overflows");
  auto total = CheckedMul(*per, static_cast<uint64_t>(num_blocks));
  if (!total || *total > kMaxCacheBytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("KV cache: ", num_blocks, " blocks of ", *per,
                     " bytes = ", total ? absl::StrCat(*total, " bytes") : std::string("more than 2^64 bytes"),
                     ", beyond the ", kMaxCacheBytes, "-byte limit"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<KvCache>> KvCache::Create(const KvCacheConfig& config) {
  if (absl::Status s = config.Validate(); !s.ok()) return s;
  const uint64_t total = static_cast<uint64_t>(config.BytesPerBlock()) * static_cast<uint64_t>(config.num_blocks);
  const uint64_t phys = PhysicalMemoryBytes();
  if (phys != 0 && total > phys) {
    return absl::ResourceExhaustedError(absl::StrCat("KV cache: ", total, " bytes (", config.num_blocks,
                                                     " blocks) exceed the machine's ", phys,
                                                     " bytes of physical memory"));
  }
  std::unique_ptr<KvCache> cache(new KvCache(config));
  cache->head_bytes_ = static_cast<size_t>(*HeadBytes(config));
  cache->block_bytes_ = cache->head_bytes_ * static_cast<size_t>(config.num_kv_heads);
  const size_t array_bytes = cache->block_bytes_ * static_cast<size_t>(config.num_blocks);
  for (std::vector<Array>* arrays : {&cache->k_, &cache->v_}) {
    arrays->reserve(static_cast<size_t>(config.num_layers));
    for (int64_t l = 0; l < config.num_layers; ++l) {
      // Anonymous mappings are zero-filled lazily by the kernel, page by page; huge pages
      // cut TLB misses when the kernel streams scattered blocks.
      absl::StatusOr<HugePageBuffer> array = HugePageBuffer::Allocate(array_bytes, "KV cache layer");
      if (!array.ok()) {
        return absl::ResourceExhaustedError(absl::StrCat(array.status().message(), " (", total, " bytes in all)"));
      }
      arrays->push_back(*std::move(array));
    }
  }
  return cache;
}

void KvCache::Write(Isa isa, int64_t layer, const float* k, const float* v, int64_t stride, int64_t rows,
                    const int32_t* positions, const int32_t* block_table, int64_t table_len) {
  const KvCacheConfig& c = config_;
  const int64_t hd = c.head_dim, bs = c.block_size;
  assert(layer >= 0 && layer < c.num_layers);
  (void)table_len;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t pos = positions[r];
    assert(pos >= 0 && pos / bs < table_len);
    const int64_t block = block_table[pos / bs];
    const int64_t slot = pos % bs;
    for (int64_t h = 0; h < c.num_kv_heads; ++h) {
      const float* ks = k + r * stride + h * hd;
      const float* vs = v + r * stride + h * hd;
      uint8_t* kd = K(layer, block, h);
      if (c.dtype == DType::kF32) {
        float* kf = reinterpret_cast<float*>(kd) + slot;
        for (int64_t d = 0; d < hd; ++d) kf[d * bs] = ks[d];
        std::memcpy(V(layer, block, h) + static_cast<size_t>(slot * hd) * sizeof(float), vs,
                    static_cast<size_t>(hd) * sizeof(float));
      } else {
        // A bf16 K row in natural order, read as 32-bit words, is the row's dim pairs.
        // V goes to the low (even slot) or high (odd slot) half of its pair's words.
        uint32_t pairs[256];
        uint32_t* kw = reinterpret_cast<uint32_t*>(kd) + slot;
        uint16_t* vh = reinterpret_cast<uint16_t*>(V(layer, block, h)) + (slot / 2) * hd * 2 + slot % 2;
        for (int64_t d0 = 0; d0 < hd; d0 += 512) {
          const int64_t n = std::min<int64_t>(512, hd - d0);
          ToBF16(isa, ks + d0, n, reinterpret_cast<uint16_t*>(pairs));
          for (int64_t i = 0; i < n / 2; ++i) kw[(d0 / 2 + i) * bs] = pairs[i];
          ToBF16(isa, vs + d0, n, reinterpret_cast<uint16_t*>(pairs));
          const uint16_t* vb = reinterpret_cast<const uint16_t*>(pairs);
          for (int64_t i = 0; i < n; ++i) vh[(d0 + i) * 2] = vb[i];
        }
      }
    }
  }
}

void KvCache::ReadK(int64_t layer, int64_t block, int64_t head, int64_t slot, float* out) const {
  const int64_t hd = config_.head_dim, bs = config_.block_size;
  const uint8_t* run = K(layer, block, head);
  for (int64_t d = 0; d < hd; ++d) {
    if (config_.dtype == DType::kF32) {
      std::memcpy(&out[d], run + static_cast<size_t>(d * bs + slot) * 4, 4);
    } else {
      uint16_t b;
      std::memcpy(&b, run + static_cast<size_t>(((d / 2) * bs + slot) * 2 + d % 2) * 2, 2);
      out[d] = BF16ToF32(b);
    }
  }
}

void KvCache::ReadV(int64_t layer, int64_t block, int64_t head, int64_t slot, float* out) const {
  const int64_t hd = config_.head_dim;
  const uint8_t* run = V(layer, block, head);
  if (config_.dtype == DType::kF32) {
    std::memcpy(out, run + static_cast<size_t>(slot * hd) * 4, static_cast<size_t>(hd) * 4);
    return;
  }
  for (int64_t d = 0; d < hd; ++d) {
    uint16_t b;
    std::memcpy(&b, run + static_cast<size_t>(((slot / 2) * hd + d) * 2 + slot % 2) * 2, 2);
    out[d] = BF16ToF32(b);
  }
}

void KvCache::CopyBlock(int64_t src, int64_t dst) {
  assert(src >= 0 && src < config_.num_blocks && dst >= 0 && dst < config_.num_blocks);
  if (src == dst) return;
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    std::memcpy(K(l, dst, 0), K(l, src, 0), block_bytes_);
    std::memcpy(V(l, dst, 0), V(l, src, 0), block_bytes_);
  }
}

size_t KvCache::total_bytes() const {
  return 2 * block_bytes_ * static_cast<size_t>(config_.num_blocks) * static_cast<size_t>(config_.num_layers);
}

}  // namespace llmserve
