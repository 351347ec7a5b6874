// Transformer::Create packs the weights (oneDNN reorders, OpenMP loops) on a thread of its
// own, so the caller's thread keeps no OpenMP team: one there, beside the engine thread's,
// makes libgomp throttle every engine step (measured in commit a03e26f).
#include <memory>
#include <thread>

#include "gtest/gtest.h"
#include "model/dtype.h"
#include "model/runtime_config.h"
#include "model/transformer.h"
#include "server/demo_model.h"
#include "tests/util/process_threads.h"

namespace llmserve {
namespace {

TEST(TransformerCreateTest, LeavesNoOpenMpThreadsBehind) {
  auto demo = MakeDemoModel();
  ASSERT_TRUE(demo.ok()) << demo.status();
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    RuntimeConfig rt;
    rt.weight_dtype = dtype;
    rt.threads = 2;
    std::ptrdiff_t before = 0, after = 0;
    bool ok = false;
    std::thread([&] {  // a thread without a team yet, as the server's main thread
      before = ProcessThreads();
      auto model = Transformer::Create(*demo->weights, rt);
      ok = model.ok();
      after = ThreadsOnceAtMost(before);
    }).join();
    ASSERT_TRUE(ok) << DTypeName(dtype);
    EXPECT_EQ(after, before) << DTypeName(dtype);
  }
}

}  // namespace
}  // namespace llmserve
