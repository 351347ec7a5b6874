// KvCache: the paged key/value storage of every layer, in blocks of block_size tokens.
//
// Block ids are handed out by the caller (the engine's block pool); the cache only
// stores. For each layer there is one K and one V array (anonymous memory mappings:
// page-aligned, zero pages faulted in lazily, so a large budget costs nothing at
// startup). Inside each array a block is [kv_heads][run], where a run is one KV head's
// block_size tokens, so that one head's keys (or values) for a block are one contiguous
// run: what the attention kernel streams.
//
//   K[layer] :  block 0                      block 1             ...  block B-1
//              ┌──────────────────────────┐ ┌──────────────────┐
//              │ head 0 run               │ │ head 0 run        │
//              │ head 1 run               │ │ ...               │
//              │ ...                      │ │                   │
//              │ head H-1 run             │ │                   │
//              └──────────────────────────┘ └──────────────────┘
//   V[layer] : same shape.
//
// Within a run (bs = block_size, D = head_dim, t = slot, d = dim):
//   V run, f32:          token-major  [bs][D]           element (t, d) at t*D + d
//   V run, bf16:         token pairs  [bs/2][D][2]      element (t, d) at ((t/2)*D + d)*2 + t%2
//   K run, f32:          dim-major    [D][bs]           element (t, d) at d*bs + t
//   K run, bf16:         dim pairs    [D/2][bs][2]      element (t, d) at ((d/2)*bs + t)*2 + d%2
// K is stored transposed so that 16 consecutive tokens of one dim (f32), or of one dim
// pair (bf16: one 32-bit word per token), are one 64-byte vector: the kernel computes
// 16 scores at a time with broadcast-query FMAs and never transposes K at read time.
// A bf16 V word holds one dim of two consecutive tokens, so that with AVX512_BF16 one
// vdpbf16ps adds both tokens' weighted values. (bf16 needs an even head_dim; a bf16 run
// has an even number of slots, bs rounded up, the last unused when bs is odd.)
//
// Token at position p of a sequence with block table T lives in block T[p / block_size]
// at slot p % block_size.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/dtype.h"
#include "model/model_config.h"
#include "model/ops/isa.h"
#include "model/ops/huge_page_buffer.h"

namespace llmserve {

struct KvCacheConfig {
  int64_t num_layers = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t block_size = 16;   // tokens per block, 1..1024
  DType dtype = DType::kF32; // kF32 or kBF16
  int64_t num_blocks = 0;

  // Geometry from a model config; num_blocks still to be set.
  static KvCacheConfig ForModel(const ModelConfig& model, int64_t block_size, DType dtype);
  // Bytes one block takes over all layers, K and V (0 if the geometry is invalid).
  size_t BytesPerBlock() const;
  // Sets num_blocks to as many blocks as fit in `bytes` (at least 0).
  void SetBlocksFromBytes(size_t bytes);
  // INVALID_ARGUMENT for a bad geometry, RESOURCE_EXHAUSTED for an absurd total size.
  absl::Status Validate() const;
};

// Engine thread only.
class KvCache {
 public:
  // Validates `config` and maps the arrays; RESOURCE_EXHAUSTED if the memory is not there.
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(const KvCacheConfig& config);

  const KvCacheConfig& config() const { return config_; }

  // Start of (layer, block, kv_head)'s K or V run (layouts above): block_size × head_dim
  // elements of dtype.
  uint8_t* K(int64_t layer, int64_t block, int64_t head) { return Slot(k_, layer, block, head); }
  uint8_t* V(int64_t layer, int64_t block, int64_t head) { return Slot(v_, layer, block, head); }
  const uint8_t* K(int64_t layer, int64_t block, int64_t head) const { return Slot(k_, layer, block, head); }
  const uint8_t* V(int64_t layer, int64_t block, int64_t head) const { return Slot(v_, layer, block, head); }

  // Writes rows of K and V (f32, [rows, kv_heads * head_dim], row stride `stride`
  // floats) for tokens at `positions` of a sequence with `block_table`, converting to
  // bf16 with AVX-512 where `isa` allows (the same bits either way). The caller has
  // validated positions and block ids (checked by assert in debug builds only).
  void Write(Isa isa, int64_t layer, const float* k, const float* v, int64_t stride, int64_t rows, const int32_t* positions,
             const int32_t* block_table, int64_t table_len);

  // Copies block `src`'s K and V, every layer and head, into block `dst` (no-op when equal).
  void CopyBlock(int64_t src, int64_t dst);

  // Reads back the K (or V) of one token slot of one head as head_dim floats.
  void ReadK(int64_t layer, int64_t block, int64_t head, int64_t slot, float* out) const;
  void ReadV(int64_t layer, int64_t block, int64_t head, int64_t slot, float* out) const;

  // Bytes of one run (one block's K or V for one KV head).
  size_t run_bytes() const { return head_bytes_; }

  // Bytes of all K and V arrays.
  size_t total_bytes() const;

 private:
  using Array = HugePageBuffer;

  explicit KvCache(const KvCacheConfig& c) : config_(c) {}
  uint8_t* Slot(const std::vector<Array>& arrays, int64_t layer, int64_t block, int64_t head) const {
    assert(layer >= 0 && layer < config_.num_layers);
    assert(block >= 0 && block < config_.num_blocks);
    assert(head >= 0 && head < config_.num_kv_heads);
    return arrays[static_cast<size_t>(layer)].data() + static_cast<size_t>(block) * block_bytes_ +
           static_cast<size_t>(head) * head_bytes_;
  }

  KvCacheConfig config_;
  size_t head_bytes_ = 0;   // block_size * head_dim * elem
  size_t block_bytes_ = 0;  // kv_heads * head_bytes_
  std::vector<Array> k_, v_;  // one array per layer
};

}  // namespace llmserve
