// Linear over quantized weights: every stacked part is repacked once at creation into the
// layout of model/quant/packed_layout.h (its own segment, so Q|K|V may mix Q4_K and Q6_K),
// all segments in one huge-page buffer. A call quantizes x to int8 once (quant_gemm.h)
// and runs the kernel over every segment's groups.
//
//   Forward, one OpenMP region:   each thread quantizes its share of x's rows
//                                 ── barrier ──
//                                 each thread runs a contiguous share of the tasks (4
//                                 groups of 16 outputs each), shares balanced by bytes
//
// No k range is split between threads, and each output's sums run in k order, so a row's
// result is the same for every M and thread count.
#include "model/ops/quant_linear.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/ops/dnn_context.h"
#include "model/ops/huge_page_buffer.h"
#include "model/quant/ggml_blocks.h"

namespace llmserve {
namespace {

// Groups of 16 outputs per task: one panel.
constexpr int64_t kTaskGroups = kQuantPanelGroups;
// Below this many weight bytes (and rows) one thread does the whole product.
constexpr size_t kParallelMinBytes = size_t{64} << 10;
// Rows converted to f32 at a time when an unquantized part is quantized to int8.
constexpr int64_t kInt8ChunkRows = 256;
static_assert(kInt8ChunkRows % (kQuantGroupRows * kQuantPanelGroups) == 0, "chunks of whole panels");

size_t Align64(size_t n) { return (n + 63) / 64 * 64; }

class QuantLinear final : public Linear {
 public:
  struct Segment {
    PackedQuantMatrix w;
    int64_t col0 = 0;  // its first output
    // From this many rows on, each thread unpacks a panel once into a scratch buffer for
    // all its row tiles, instead of in registers for every tile (QuantPanelScratchMinRows).
    int64_t scratch_min_rows = 0;
  };
  struct Task {
    int32_t seg;
    int64_t g0, g1;
  };

  QuantLinear(DnnContext& ctx, std::string name, int64_t in, int64_t cols, QuantKernel kernel)
      : ctx_(ctx), name_(std::move(name)), in_(in), cols_(cols), kernel_(kernel) {}

  absl::Status Pack(std::span<const TensorView* const> parts, const float* bias, WeightQuant quant);

  void Forward(const float* x, int64_t m, float* y) override;
  int64_t in_features() const override { return in_; }
  int64_t out_features() const override { return out_; }
  size_t weight_bytes() const override { return weight_bytes_; }
  bool uses_gemv() const override { return false; }
  bool uses_small_gemm(int64_t) const override { return false; }
  std::string format() const override {
    std::vector<std::string> names;
    for (const Segment& s : segments_) {
      std::string n(QuantTypeName(s.w.type));
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
    return absl::StrJoin(names, "+");
  }
  std::string kernel() const override { return QuantKernelName(kernel_); }

 private:
  // Tasks [lo, hi) of thread t of nt: those whose first byte falls in its share.
  std::pair<size_t, size_t> TaskRange(int t, int nt) const {
    const uint64_t total = cost_prefix_.back();
    auto at = [&](int i) {
      const uint64_t target = total * static_cast<uint64_t>(i) / static_cast<uint64_t>(nt);
      return static_cast<size_t>(std::lower_bound(cost_prefix_.begin(), cost_prefix_.end() - 1, target) -
                                 cost_prefix_.begin());
    };
    return {at(t), t + 1 == nt ? tasks_.size() : at(t + 1)};
  }

  DnnContext& ctx_;
  const std::string name_;
  const int64_t in_, cols_;  // x's width; the packed k (in rounded up to the block)
  const QuantKernel kernel_;
  int64_t out_ = 0;
  size_t weight_bytes_ = 0;
  HugePageBuffer storage_;
  std::vector<Segment> segments_;
  int64_t scratch_min_rows_ = 0;  // the fewest of the segments' scratch_min_rows
  std::vector<Task> tasks_;
  std::vector<uint64_t> cost_prefix_;  // [tasks + 1] bytes before each task
  std::vector<float> bias_;             // [out] or empty
};

absl::Status QuantLinear::Pack(std::span<const TensorView* const> parts, const float* bias, WeightQuant quant) {
  std::vector<QuantType> types;
  std::vector<size_t> offsets;
  size_t total = 0;
  for (const TensorView* p : parts) {
    const bool keep = p->quantized() && (quant != WeightQuant::kInt8 || p->quant == QuantType::kQ8_0);
    const QuantType t = keep ? p->quant : QuantType::kQ8_0;
    types.push_back(t);
    offsets.push_back(total);
    total += Align64(PackedQuantBytes(t, p->shape[0], cols_));
    out_ += p->shape[0];
  }
  absl::StatusOr<HugePageBuffer> storage = HugePageBuffer::Allocate(total, "packed quantized weights");
  if (!storage.ok()) return storage.status();
  storage_ = *std::move(storage);
  weight_bytes_ = total;

  int64_t col0 = 0;
  std::vector<float> rows_f32;
  for (size_t i = 0; i < parts.size(); ++i) {
    const TensorView& p = *parts[i];
    const int64_t rows = p.shape[0];
    uint8_t* dst = storage_.data() + offsets[i];
    if (types[i] == p.quant) {
      PackGgmlRows(p.quant, p.data, rows, cols_, dst);
    } else {
      // To int8, kInt8ChunkRows (a multiple of the group) rows at a time through f32.
      const PackedQuantMatrix shape = MakePackedQuantMatrix(QuantType::kQ8_0, rows, cols_, nullptr);
      const size_t src_row_bytes = p.nbytes / static_cast<size_t>(rows);
      for (int64_t r0 = 0; r0 < rows; r0 += kInt8ChunkRows) {
        const int64_t n = std::min(kInt8ChunkRows, rows - r0);
        rows_f32.resize(static_cast<size_t>(n * in_));
        const uint8_t* src = p.data + static_cast<size_t>(r0) * src_row_bytes;
        for (int64_t r = 0; r < n; ++r) {
          float* out = rows_f32.data() + r * in_;
          if (p.quantized()) {
            DequantizeRow(p.quant, src + static_cast<size_t>(r) * src_row_bytes, in_, out);
          } else {
            ConvertToF32(p.dtype, src + static_cast<size_t>(r) * src_row_bytes, static_cast<size_t>(in_), out);
          }
        }
        PackInt8Rows(rows_f32.data(), n, in_, dst + (r0 / kQuantGroupRows) * shape.group_bytes);
      }
    }
    const int32_t seg = static_cast<int32_t>(segments_.size());
    segments_.push_back({MakePackedQuantMatrix(types[i], rows, cols_, dst), col0,
                         QuantPanelScratchMinRows(kernel_, types[i])});
    const PackedQuantMatrix& w = segments_.back().w;
    for (int64_t g = 0; g < w.groups; g += kTaskGroups) tasks_.push_back({seg, g, std::min(g + kTaskGroups, w.groups)});
    col0 += rows;
  }
  scratch_min_rows_ = std::min_element(segments_.begin(), segments_.end(), [](const Segment& a, const Segment& b) {
                        return a.scratch_min_rows < b.scratch_min_rows;
                      })->scratch_min_rows;
  cost_prefix_.assign(1, 0);
  for (const Task& t : tasks_) {
    const uint64_t bytes = static_cast<uint64_t>((t.g1 - t.g0) * segments_[static_cast<size_t>(t.seg)].w.group_bytes);
    cost_prefix_.push_back(cost_prefix_.back() + bytes);
  }
  if (bias != nullptr) bias_.assign(bias, bias + out_);
  return absl::OkStatus();
}

void QuantLinear::Forward(const float* x, int64_t m, float* y) {
  if (m <= 0) return;
  void* buffer = ctx_.ScratchBuffer(DnnContext::Scratch::kQuantActs, QuantizedActsBytes(m, cols_));
  const QuantizedActs a = MapQuantizedActs(buffer, m, cols_);
  const float* bias = bias_.empty() ? nullptr : bias_.data();
  const bool parallel = weight_bytes_ >= kParallelMinBytes || m >= 16;
  const size_t panel_bytes = QuantPanelScratchBytes(cols_);
  uint8_t* panels = nullptr;
  if (m >= scratch_min_rows_) {
    const size_t threads = parallel ? static_cast<size_t>(omp_get_max_threads()) : 1;
    panels = static_cast<uint8_t*>(ctx_.ScratchBuffer(DnnContext::Scratch::kQuantPanels, threads * panel_bytes));
  }
#pragma omp parallel if (parallel)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    uint8_t* scratch = panels != nullptr ? panels + static_cast<size_t>(t) * panel_bytes : nullptr;
    QuantizeActs(kernel_, x, in_, m * t / nt, m * (t + 1) / nt, a);
#pragma omp barrier
    const auto [lo, hi] = TaskRange(t, nt);
    for (size_t i = lo; i < hi; ++i) {
      const Task& task = tasks_[i];
      const Segment& s = segments_[static_cast<size_t>(task.seg)];
      uint8_t* seg_scratch = m >= s.scratch_min_rows ? scratch : nullptr;
      QuantGemm(kernel_, s.w, task.g0, task.g1, a, seg_scratch, bias != nullptr ? bias + s.col0 : nullptr,
                y + s.col0, out_);
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Linear>> CreateQuantLinear(DnnContext& ctx, std::span<const TensorView* const> parts,
                                                          const float* bias, const LinearOptions& options) {
  const TensorView& first = *parts.front();
  const int64_t in = first.shape[1];
  int64_t cols = in;
  bool all_int8 = true;
  for (const TensorView* p : parts) {
    const bool keep = p->quantized() && (options.quant != WeightQuant::kInt8 || p->quant == QuantType::kQ8_0);
    if (keep) all_int8 = false;
  }
  if (all_int8) cols = PaddedInt8Cols(in);
  for (const TensorView* p : parts) {
    const int64_t block = p->quantized() ? QuantBlockElems(p->quant) : 32;
    if (in % block != 0 && !(all_int8 && !p->quantized())) {
      return absl::InvalidArgumentError(absl::StrCat("linear ", p->name, ": ", in, " columns are not a multiple of ",
                                                     p->TypeName(), "'s block of ", block));
    }
  }
  if (!QuantKernelSupported(options.quant_kernel)) {
    return absl::InvalidArgumentError(
        absl::StrCat("linear ", first.name, ": kernel ", QuantKernelName(options.quant_kernel), " is not supported here"));
  }
  auto linear = std::make_unique<QuantLinear>(ctx, first.name, in, cols, options.quant_kernel);
  if (absl::Status s = linear->Pack(parts, bias, options.quant); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("linear ", first.name, ": ", s.message()));
  }
  return std::unique_ptr<Linear>(std::move(linear));
}

}  // namespace llmserve
