// RuntimeConfig validation, CPU feature detection (checked against /proc/cpuinfo) and the
// thread-count setting.
#include "model/runtime_config.h"

#include <omp.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace llmserve {
namespace {

TEST(RuntimeConfigTest, DefaultsAreValid) { EXPECT_TRUE(RuntimeConfig{}.Validate().ok()); }

TEST(RuntimeConfigTest, AcceptsF32AndBf16) {
  for (DType w : {DType::kF32, DType::kBF16}) {
    for (DType kv : {DType::kF32, DType::kBF16}) {
      RuntimeConfig c;
      c.weight_dtype = w;
      c.kv_dtype = kv;
      EXPECT_TRUE(c.Validate().ok()) << c.Validate();
    }
  }
}

TEST(RuntimeConfigTest, RejectsF16) {
  RuntimeConfig c;
  c.weight_dtype = DType::kF16;
  absl::Status s = c.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("weight_dtype"), absl::string_view::npos) << s;
  c = RuntimeConfig{};
  c.kv_dtype = DType::kF16;
  s = c.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("kv_dtype"), absl::string_view::npos) << s;
}

TEST(RuntimeConfigTest, ThreadRange) {
  for (int t : {0, 1, 2, 1024}) {
    RuntimeConfig c;
    c.threads = t;
    EXPECT_TRUE(c.Validate().ok()) << t;
  }
  for (int t : {-1, 1025, 1 << 30}) {
    RuntimeConfig c;
    c.threads = t;
    absl::Status s = c.Validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << t;
    EXPECT_NE(s.message().find("threads"), absl::string_view::npos) << s;
  }
}

// The flags of the first processor in /proc/cpuinfo; empty when unreadable.
std::set<std::string> CpuInfoFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::set<std::string> flags;
      for (std::string w; words >> w;) flags.insert(w);
      return flags;
    }
  }
  return {};
}

TEST(RuntimeConfigTest, CpuFeaturesAgreeWithProcCpuinfo) {
  const std::set<std::string> flags = CpuInfoFlags();
  if (flags.empty()) GTEST_SKIP() << "/proc/cpuinfo has no flags line";
  const bool avx512 = flags.count("avx512f") && flags.count("avx512bw") && flags.count("avx512vl");
  EXPECT_EQ(CpuHasAvx512(), avx512);
  EXPECT_EQ(CpuHasAvx512Bf16(), avx512 && flags.count("avx512_bf16") > 0);
  EXPECT_EQ(DefaultWeightDType(), CpuHasAvx512Bf16() ? DType::kBF16 : DType::kF32);
}

TEST(RuntimeConfigTest, ApplyThreadCount) {
  EXPECT_EQ(ApplyThreadCount(3), 3);
  EXPECT_EQ(omp_get_max_threads(), 3);
  int team = 0;
#pragma omp parallel
  {
#pragma omp single
    team = omp_get_num_threads();
  }
  EXPECT_EQ(team, 3);
  EXPECT_EQ(ApplyThreadCount(0), omp_get_num_procs());
  EXPECT_EQ(omp_get_max_threads(), omp_get_num_procs());
  // The setting is per thread: a thread that applies it gets it.
  int in_thread = 0;
  std::thread t([&] { in_thread = ApplyThreadCount(5) == 5 ? omp_get_max_threads() : -1; });
  t.join();
  EXPECT_EQ(in_thread, 5);
}

}  // namespace
}  // namespace llmserve
