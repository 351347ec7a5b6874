// stream_bench: how close the decode kernels come to streaming their weights at the
// memory bandwidth available at that moment. On a shared machine the bandwidth moves by 2x
// within the hour, so a kernel is compared with a plain read of the same bytes, measured
// right before it in the same process, pass after pass.
//
//   stream_bench [--passes 8] [--threads 2] [--dtype bf16|f32] [--compare-blocks STEPS]
//
// Weights: 88 matrices of 5632 x 2048 in the GEMV/small-GEMM panel layout (model/ops/gemv.h),
// 2.0 GB in bf16 (the "1b" model's decode stream), in huge-page buffers as the model's.
// Each pass times: a plain read (AVX-512 sum over the bytes, threads on contiguous halves);
// the GEMV at M=1; the small-batch kernel at M=8 and M=16. Printed per pass: GB/s of each,
// the kernel ÷ read ratios, and GFLOP/s at M=8 and 16; then the medians. --compare-blocks
// also times the small-batch kernel with k blocks of STEPS panel rows in every pass (the
// default is 256) and prints default ÷ that, per pass and as medians.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "model/ops/gemv.h"
#include "model/ops/huge_page_buffer.h"
#include "model/ops/small_gemm.h"

namespace {

using llmserve::DType;

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

__attribute__((target("avx512f"))) float SumFloats(const float* a, int64_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t i = 0; i + 64 <= n; i += 64) {
    s0 = _mm512_add_ps(s0, _mm512_load_ps(a + i));
    s1 = _mm512_add_ps(s1, _mm512_load_ps(a + i + 16));
    s2 = _mm512_add_ps(s2, _mm512_load_ps(a + i + 32));
    s3 = _mm512_add_ps(s3, _mm512_load_ps(a + i + 48));
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
  float sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}

// Reads every byte of `buf` once with all threads (contiguous share each).
float ReadAll(const llmserve::HugePageBuffer& buf) {
  const auto* a = reinterpret_cast<const float*>(buf.data());
  const int64_t n = static_cast<int64_t>(buf.size() / sizeof(float));
  float total = 0;
#pragma omp parallel reduction(+ : total)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t lo = n * t / nt / 64 * 64, hi = n * (t + 1) / nt / 64 * 64;
    total += SumFloats(a + lo, hi - lo);
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  int passes = 8, threads = 2;
  int64_t compare_blocks = 0;
  DType dtype = DType::kBF16;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--passes") {
      passes = std::max(1, std::atoi(value.c_str()));
    } else if (flag == "--threads") {
      threads = std::max(1, std::atoi(value.c_str()));
    } else if (flag == "--compare-blocks" && std::atoi(value.c_str()) > 0) {
      compare_blocks = std::atoi(value.c_str());
    } else if (flag == "--dtype" && (value == "bf16" || value == "f32")) {
      dtype = value == "bf16" ? DType::kBF16 : DType::kF32;
    } else {
      std::fprintf(stderr, "usage: stream_bench [--passes N] [--threads N] [--dtype bf16|f32] [--compare-blocks STEPS]\n");
      return 2;
    }
  }
  const llmserve::CpuFeatures cpu = llmserve::CpuFeatures::Detect();
  if (!llmserve::GemvSupported(dtype, cpu.isa()) || !llmserve::SmallGemmSupported(dtype, cpu.isa())) {
    std::fprintf(stderr, "stream_bench: this CPU lacks the AVX-512 kernels for %s; nothing to measure\n",
                 dtype == DType::kBF16 ? "bf16" : "f32");
    return 0;
  }
  omp_set_num_threads(threads);
  constexpr int kMatrices = 88;
  constexpr int64_t kIn = 2048, kOut = 5632;
  const size_t esize = dtype == DType::kBF16 ? 2 : 4;
  const size_t bytes = llmserve::GemvPackedElements(dtype, kOut, kIn) * esize;
  std::vector<llmserve::HugePageBuffer> bufs;
  std::vector<llmserve::GemvWeights> ws;
  for (int l = 0; l < kMatrices; ++l) {
    absl::StatusOr<llmserve::HugePageBuffer> b = llmserve::HugePageBuffer::Allocate(bytes, "weights");
    if (!b.ok()) {
      std::fprintf(stderr, "stream_bench: %s\n", b.status().ToString().c_str());
      return 1;
    }
    std::memset(b->data(), 0x3c, bytes);  // small finite values in both dtypes; touches every page
    llmserve::GemvWeights w;
    w.dtype = dtype;
    w.in = kIn;
    w.out = kOut;
    w.in_padded = kIn;
    w.data = b->data();
    ws.push_back(w);
    bufs.push_back(*std::move(b));
  }
  const double gb = static_cast<double>(bytes) * kMatrices / 1e9;
  const double flops_per_row = 2.0 * kIn * kOut * kMatrices / 1e9;
  std::vector<float> x(16 * kIn, 0.5f), y(16 * kOut);
  std::vector<uint16_t> scratch(
      std::max(llmserve::SmallGemmScratchElements(ws[0], 16), llmserve::GemvScratchElements(ws[0], 4)));
  std::printf("stream_bench: %d threads, %s, %.2f GB of weights\n", threads, dtype == DType::kBF16 ? "bf16" : "f32", gb);
  std::printf("pass | read GB/s | M=1 GB/s (÷read) | M=8 GB/s (÷read), GFLOP/s | M=16 GB/s, GFLOP/s\n");
  // The small-batch kernel as Linear runs it on this CPU (its bf16 tile), and with the
  // compared block size.
  const llmserve::SmallGemmOptions options{llmserve::Bf16KernelFor(cpu), llmserve::kSmallGemmBlockSteps};
  const llmserve::SmallGemmOptions compared{options.bf16_kernel, compare_blocks};
  std::vector<double> read, m1, m8, m16, r1, r8, alt8, alt16;
  volatile float sink = 0;
  for (int p = 0; p < passes; ++p) {
    const double t0 = Now();
    float s = 0;
    for (const llmserve::HugePageBuffer& b : bufs) s += ReadAll(b);
    const double t1 = Now();
    for (const llmserve::GemvWeights& w : ws) llmserve::Gemv(w, x.data(), 1, y.data(), scratch.data());
    const double t2 = Now();
    for (const llmserve::GemvWeights& w : ws) llmserve::SmallGemm(w, x.data(), 8, y.data(), scratch.data(), options);
    const double t3 = Now();
    for (const llmserve::GemvWeights& w : ws) llmserve::SmallGemm(w, x.data(), 16, y.data(), scratch.data(), options);
    const double t4 = Now();
    if (compare_blocks > 0) {
      const double a0 = Now();
      for (const llmserve::GemvWeights& w : ws) llmserve::SmallGemm(w, x.data(), 8, y.data(), scratch.data(), compared);
      const double a1 = Now();
      for (const llmserve::GemvWeights& w : ws) {
        llmserve::SmallGemm(w, x.data(), 16, y.data(), scratch.data(), compared);
      }
      const double a2 = Now();
      alt8.push_back((a1 - a0) / (t3 - t2));  // default's speed ÷ the compared block size's
      alt16.push_back((a2 - a1) / (t4 - t3));
    }
    sink = sink + s + y[0];
    read.push_back(gb / (t1 - t0));
    m1.push_back(gb / (t2 - t1));
    m8.push_back(gb / (t3 - t2));
    m16.push_back(gb / (t4 - t3));
    r1.push_back(m1.back() / read.back());
    r8.push_back(m8.back() / read.back());
    std::printf("%4d | %9.1f | %8.1f (%.2f)    | %8.1f (%.2f), %.0f     | %9.1f, %.0f\n", p, read.back(), m1.back(),
                r1.back(), m8.back(), r8.back(), 8 * flops_per_row / (t3 - t2), m16.back(),
                16 * flops_per_row / (t4 - t3));
    if (compare_blocks > 0) {
      std::printf("     | default ÷ %ld-step blocks: M=8 %.3f, M=16 %.3f\n", static_cast<long>(compare_blocks),
                  alt8.back(), alt16.back());
    }
  }
  std::printf("median | read %.1f GB/s | M=1 %.1f GB/s, %.2f of read | M=8 %.1f GB/s, %.2f of read, %.0f GFLOP/s | "
              "M=16 %.0f GFLOP/s\n",
              Median(read), Median(m1), Median(r1), Median(m8), Median(r8), Median(m8) / gb * 8 * flops_per_row,
              Median(m16) / gb * 16 * flops_per_row);
  if (compare_blocks > 0) {
    std::printf("median | default ÷ %ld-step blocks: M=8 %.3f, M=16 %.3f\n", static_cast<long>(compare_blocks),
                Median(alt8), Median(alt16));
  }
  return 0;
}
