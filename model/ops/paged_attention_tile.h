// The tiles the AVX-512 attention kernel (paged_attention_avx512.cc) walks: where a
// tile's tokens are in the paged cache (BuildTile), and a bf16 tile widened to f32 once
// for all of a task's query blocks (WidenTile). Internal to the attention op.
#pragma once

#include <cstdint>

#include "model/kv_cache.h"
#include "model/ops/paged_attention_internal.h"

namespace llmserve::attention {

inline constexpr int kVec = static_cast<int>(kVectorTokens);      // floats per vector
inline constexpr int kTileVecs = static_cast<int>(kTileVectors);  // token vectors per tile
inline constexpr int kTile = kVec * kTileVecs;                    // tokens per tile (score row stride)

// Up to 16 consecutive tokens of one block (the first at an even slot).
struct TokenVec {
  const uint8_t* k;  // word of the first token's dim 0 (f32) or dim pair 0 (bf16)
  const uint8_t* v;  // the first token's V row (f32) or token pair row (bf16)
  int64_t start;     // position of the first token
  int64_t n;         // tokens, 1..16
};

// Most V rows of a tile: its tokens (f32), or its token pairs (bf16: a vector of n tokens
// has (n + 1) / 2 pairs).
inline constexpr int kTileRows = kTile / 2 + kTileVecs > kTile ? kTile / 2 + kTileVecs : kTile;

// The tokens of one tile: up to 4 vectors, and the V rows: one per token (f32), or one
// per token pair (bf16), in token order.
struct Tile {
  TokenVec tv[kTileVecs];
  const uint8_t* vrows[kTileRows];
  int16_t first[kTileRows];  // bf16: the pair's first token (index in the tile)
  bool single[kTileRows];    // bf16: the pair's second token is not the tile's (odd vector)
  int pair_base[kTileVecs];  // bf16: index of each vector's first pair
  int ntv = 0, nrows = 0;
  int64_t start = 0, n = 0;  // tokens [start, start + n)
};

// The tile of tokens from t0 on (empty when t0 >= n_tok). vrow: bytes of a V row (a
// token's, or a token pair's). Unused vectors and rows repeat the last used one, so that
// prefetching from any of them is harmless.
// Instantiated for an f32 (false) and a bf16 (true) cache.
template <bool kBf16>
void BuildTile(const KvCache& cache, int64_t layer, int64_t head, const int32_t* table, int64_t vrow, int64_t t0,
               int64_t n_tok, Tile& tile);

// A bf16 tile widened to f32 (WidenTile): K as token vectors in the f32 cache's layout
// (dims of 16 floats, so 64 bytes between dims), V as one f32 row per token, the tile's
// token j at vrows[j].
struct WideTile {
  TokenVec tv[kTileVecs];
  const uint8_t* vrows[kTile];
};

// Widens `tile` of a bf16 cache (kstep: bytes between K dim pairs) into wk / wv (rows of
// hd floats) and points `out` at them; masked lanes and a single pair's second token are
// left out, as the widening kernels leave them out. Prefetches the K and V of `ahead`
// into L2 meanwhile (the f32 kernels then run without a prefetch of their own).
// Call only where the CPU has AVX-512 (F/BW/VL).
void WidenTile(const Tile& tile, int64_t hd, int64_t kstep, float* wk, float* wv, const Tile& ahead, WideTile& out);

}  // namespace llmserve::attention
