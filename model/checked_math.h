// Overflow-checked size arithmetic for parsing untrusted headers.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace llmserve {

// a * b, or nullopt on overflow.
inline std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a + b, or nullopt on overflow.
inline std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Product of all dims (each must be >= 0), or nullopt on overflow / negative dim.
inline std::optional<uint64_t> CheckedNumel(std::span<const int64_t> shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    auto r = CheckedMul(n, static_cast<uint64_t>(d));
    if (!r) return std::nullopt;
    n = *r;
  }
  return n;
}

}  // namespace llmserve
