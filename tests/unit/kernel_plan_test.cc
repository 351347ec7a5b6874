// PlanKernels (model/kernel_plan.h): the default choice for each CPU kind and weight
// dtype, what each RuntimeConfig::kernels choice forces, the start-up description, and
// that a Transformer keeps the plan it was built with.
#include "model/kernel_plan.h"

#include <string>

#include "gtest/gtest.h"
#include "model/transformer.h"
#include "server/demo_model.h"

namespace llmserve {
namespace {

// An AVX-512 CPU with bf16 and VNNI: AMD (Zen 4) or Intel (Xeon).
CpuFeatures Avx512Cpu(bool intel) {
  CpuFeatures cpu;
  cpu.avx512 = cpu.avx512_bf16 = cpu.avx512_vnni = true;
  cpu.intel = intel;
  return cpu;
}

RuntimeConfig Runtime(DType weights) {
  RuntimeConfig rt;
  rt.weight_dtype = weights;
  return rt;
}

TEST(KernelPlanTest, DefaultsOnAnAmdAvx512Cpu) {
  const KernelPlan p = PlanKernels(Runtime(DType::kBF16), Avx512Cpu(false));
  EXPECT_EQ(p.isa, Isa::kAvx512Bf16);
  EXPECT_EQ(p.linear.isa, Isa::kAvx512Bf16);
  EXPECT_EQ(p.linear.compute, DType::kBF16);
  EXPECT_EQ(p.linear.quant_kernel, QuantKernel::kAvx512Vnni);
  EXPECT_TRUE(p.linear.dense.gemv);
  EXPECT_EQ(p.linear.dense.small_gemm_min_rows, kSmallGemmMinRows);
  EXPECT_EQ(p.linear.dense.small_gemm_max_rows, kSmallGemmMaxRows);
  EXPECT_EQ(p.linear.dense.small_gemm.bf16_kernel, Bf16Kernel::kDot);
  EXPECT_EQ(p.linear.dense.small_gemm.block_steps, kSmallGemmBlockSteps);
  EXPECT_EQ(p.attention.isa, Isa::kAvx512Bf16);
  EXPECT_TRUE(p.attention.bf16_dot);
  EXPECT_TRUE(p.attention.kv_prefetch);
  EXPECT_EQ(p.Describe(),
            "isa avx512-bf16 | bf16 layers gemv 1-4, small-batch/dot 5-32, onednn 33+ | quantized avx512-vnni | "
            "attention avx512-bf16 (bf16 dot) with K/V prefetch");
}

TEST(KernelPlanTest, IntelRunsEveryBf16ProductOnTheFmaKernel) {
  const KernelPlan bf16 = PlanKernels(Runtime(DType::kBF16), Avx512Cpu(true));
  EXPECT_EQ(bf16.linear.dense.small_gemm.bf16_kernel, Bf16Kernel::kFma);
  EXPECT_EQ(bf16.linear.dense.small_gemm_min_rows, 1);
  EXPECT_EQ(bf16.linear.dense.small_gemm_max_rows, kSmallGemmFmaDispatchRows);
  EXPECT_EQ(DescribeDenseDispatch(DType::kBF16, bf16.linear.isa, bf16.linear.dense), "small-batch/fma");
  // Attention over a bf16 cache follows the same rule: widened to f32.
  EXPECT_FALSE(bf16.attention.bf16_dot);
  EXPECT_NE(bf16.Describe().find("attention avx512-bf16 (bf16 fma) with K/V prefetch"), std::string::npos)
      << bf16.Describe();
  // f32 weights have no bf16 tile: the same dispatch as on any AVX-512 CPU.
  const KernelPlan f32 = PlanKernels(Runtime(DType::kF32), Avx512Cpu(true));
  EXPECT_EQ(f32.linear.dense.small_gemm_min_rows, kSmallGemmMinRows);
  EXPECT_EQ(f32.linear.dense.small_gemm_max_rows, kSmallGemmMaxRows);
  EXPECT_EQ(DescribeDenseDispatch(DType::kF32, f32.linear.isa, f32.linear.dense),
            "gemv 1-4, small-batch 5-32, onednn 33+");
}

TEST(KernelPlanTest, CpuWithoutAvx512RunsTheScalarKernels) {
  const KernelPlan p = PlanKernels(Runtime(DType::kF32), CpuFeatures{});
  EXPECT_EQ(p.isa, Isa::kScalar);
  EXPECT_EQ(p.linear.quant_kernel, QuantKernel::kScalar);
  EXPECT_EQ(p.attention.isa, Isa::kScalar);
  EXPECT_EQ(p.Describe(), "isa scalar | f32 layers onednn | quantized scalar | attention scalar");
}

TEST(KernelPlanTest, IsaIsACap) {
  RuntimeConfig rt = Runtime(DType::kBF16);
  rt.kernels.isa = Isa::kAvx512;
  const KernelPlan p = PlanKernels(rt, Avx512Cpu(false));
  EXPECT_EQ(p.isa, Isa::kAvx512);
  EXPECT_EQ(p.attention.isa, Isa::kAvx512);  // a bf16 cache widened to f32
  EXPECT_EQ(p.linear.quant_kernel, QuantKernel::kAvx512Vnni);
  // The bf16 GEMV and small-batch kernel need AVX512_BF16: every M on oneDNN.
  EXPECT_EQ(DescribeDenseDispatch(DType::kBF16, p.linear.isa, p.linear.dense), "onednn");
  // A cap above what the CPU has gives what it has.
  CpuFeatures no_bf16 = Avx512Cpu(false);
  no_bf16.avx512_bf16 = false;
  rt.kernels.isa = Isa::kAvx512Bf16;
  EXPECT_EQ(PlanKernels(rt, no_bf16).isa, Isa::kAvx512);
  rt.kernels.isa = Isa::kScalar;
  const KernelPlan scalar = PlanKernels(rt, Avx512Cpu(true));
  EXPECT_EQ(scalar.isa, Isa::kScalar);
  EXPECT_EQ(scalar.linear.quant_kernel, QuantKernel::kScalar);
  EXPECT_EQ(scalar.attention.isa, Isa::kScalar);
  // An explicit quantized kernel wins over the cap's default.
  rt.quant_kernel = QuantKernel::kAvx512Vnni;
  EXPECT_EQ(PlanKernels(rt, Avx512Cpu(true)).linear.quant_kernel, QuantKernel::kAvx512Vnni);
}

TEST(KernelPlanTest, ChoicesOverrideTheRules) {
  RuntimeConfig rt = Runtime(DType::kBF16);
  rt.kernels.bf16_kernel = Bf16Kernel::kFma;
  rt.kernels.kv_prefetch = false;
  KernelPlan p = PlanKernels(rt, Avx512Cpu(false));
  EXPECT_EQ(p.linear.dense.small_gemm.bf16_kernel, Bf16Kernel::kFma);
  EXPECT_EQ(p.linear.dense.small_gemm_min_rows, 1);  // the FMA kernel's dispatch
  EXPECT_FALSE(p.attention.bf16_dot);  // the bf16 tile's choice holds for attention too
  EXPECT_FALSE(p.attention.kv_prefetch);
  EXPECT_NE(p.Describe().find("attention avx512-bf16 (bf16 fma) without K/V prefetch"), std::string::npos)
      << p.Describe();

  rt = Runtime(DType::kBF16);
  rt.kernels.small_gemm_min_rows = 1;
  rt.kernels.small_gemm_max_rows = 64;
  p = PlanKernels(rt, Avx512Cpu(false));
  EXPECT_EQ(DescribeDenseDispatch(DType::kBF16, p.linear.isa, p.linear.dense), "small-batch/dot 1-64, onednn 65+");
  rt.kernels.gemv = false;
  rt.kernels.small_gemm_min_rows.reset();
  rt.kernels.small_gemm_max_rows.reset();
  p = PlanKernels(rt, Avx512Cpu(false));
  EXPECT_EQ(DescribeDenseDispatch(DType::kBF16, p.linear.isa, p.linear.dense),
            "onednn 1-4, small-batch/dot 5-32, onednn 33+");
  rt.kernels.small_gemm = false;
  p = PlanKernels(rt, Avx512Cpu(true));
  EXPECT_FALSE(p.linear.dense.gemv);
  EXPECT_EQ(p.linear.dense.small_gemm_max_rows, 0);
  EXPECT_EQ(DescribeDenseDispatch(DType::kBF16, p.linear.isa, p.linear.dense), "onednn");
}

TEST(KernelPlanTest, ValidateRejectsBadRowRanges) {
  RuntimeConfig rt;
  rt.kernels.small_gemm_min_rows = 0;
  EXPECT_EQ(rt.Validate().code(), absl::StatusCode::kInvalidArgument);
  rt.kernels.small_gemm_min_rows = 1;
  rt.kernels.small_gemm_max_rows = -1;
  EXPECT_EQ(rt.Validate().code(), absl::StatusCode::kInvalidArgument);
  rt.kernels.small_gemm_max_rows = 0;
  EXPECT_TRUE(rt.Validate().ok());
}

// DefaultLinearOptions (what tests and benches build single layers with) is the plan of
// a default RuntimeConfig on this CPU.
TEST(KernelPlanTest, DefaultLinearOptionsAreThisCpusPlan) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    const LinearOptions plan = PlanKernels(Runtime(dtype), CpuFeatures::Detect()).linear;
    const LinearOptions d = DefaultLinearOptions(dtype);
    EXPECT_EQ(d.compute, plan.compute);
    EXPECT_EQ(d.quant, plan.quant);
    EXPECT_EQ(d.quant_kernel, plan.quant_kernel);
    EXPECT_EQ(d.isa, plan.isa);
    EXPECT_EQ(d.dense.gemv, plan.dense.gemv);
    EXPECT_EQ(d.dense.small_gemm_min_rows, plan.dense.small_gemm_min_rows);
    EXPECT_EQ(d.dense.small_gemm_max_rows, plan.dense.small_gemm_max_rows);
    EXPECT_EQ(d.dense.small_gemm.bf16_kernel, plan.dense.small_gemm.bf16_kernel);
  }
}

// The Transformer plans once at Create and its layers run what the plan says.
TEST(KernelPlanTest, TransformerKeepsItsPlan) {
  auto demo = MakeDemoModel();
  ASSERT_TRUE(demo.ok()) << demo.status();
  RuntimeConfig rt;
  rt.weight_dtype = DType::kF32;
  rt.threads = 1;
  rt.kernels.isa = Isa::kScalar;
  rt.kernels.kv_prefetch = false;
  auto scalar = Transformer::Create(*demo->weights, rt);
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ((*scalar)->kernel_plan().isa, Isa::kScalar);
  EXPECT_FALSE((*scalar)->kernel_plan().attention.kv_prefetch);
  EXPECT_EQ((*scalar)->kernel_plan().Describe(), PlanKernels(rt, CpuFeatures::Detect()).Describe());
  // Scalar dense layers: no GEMV, no small-batch kernel.
  EXPECT_NE((*scalar)->weights_summary().find("f32 (onednn)"), std::string::npos) << (*scalar)->weights_summary();
}

}  // namespace
}  // namespace llmserve
