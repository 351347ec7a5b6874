// An Engine over a real Transformer with a paged KV cache of 16-token blocks, started, for
// the tests that run real models through the engine (engine_golden_test.cc,
// engine_quant_test.cc, llm_service_golden_test.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "model/kv_cache.h"
#include "model/transformer.h"
#include "scheduler/engine.h"

namespace llmserve::testing {

struct TransformerEngineOptions {
  int32_t num_blocks = 64;  // of 16 tokens
  DType kv_dtype = DType::kF32;
  int32_t max_running = 32;
  int32_t max_batched_tokens = 256;
  int32_t max_prefill_chunk = 64;
  bool prefix_caching = true;
};

inline absl::StatusOr<std::unique_ptr<Engine>> StartTransformerEngine(std::unique_ptr<Transformer> model,
                                                                       const Tokenizer* tok,
                                                                       const TransformerEngineOptions& o) {
  KvCacheConfig kc = KvCacheConfig::ForModel(model->config(), 16, o.kv_dtype);
  kc.num_blocks = o.num_blocks;
  auto cache = KvCache::Create(kc);
  if (!cache.ok()) return cache.status();
  EngineConfig c;
  c.scheduler.block_size = 16;
  c.scheduler.max_running = o.max_running;
  c.scheduler.max_batched_tokens = o.max_batched_tokens;
  c.scheduler.max_prefill_chunk = o.max_prefill_chunk;
  c.scheduler.prefix_caching = o.prefix_caching;
  if (tok->eos_id() >= 0) c.scheduler.eos_ids = {tok->eos_id()};
  auto e = Engine::Create(c, MakeTransformerEngineModel(std::move(model), *std::move(cache), 2), tok);
  if (!e.ok()) return e.status();
  (*e)->Start();
  return e;
}

// Submits every request, then collects each one's generated ids, in order (empty, with a
// test failure, for a request refused or not finished within `wait`).
inline std::vector<std::vector<int32_t>> SubmitAndCollect(Engine& e, const std::vector<EngineRequest>& reqs,
                                                          absl::Duration wait) {
  std::vector<RequestHandle> hs;
  for (const EngineRequest& r : reqs) {
    auto h = e.Submit(r);
    EXPECT_TRUE(h.ok()) << h.status();
    hs.push_back(h.ok() ? *h : RequestHandle{});
  }
  std::vector<std::vector<int32_t>> out;
  for (const RequestHandle& h : hs) {
    auto g = h.channel == nullptr ? absl::InternalError("not submitted") : CollectGeneration(*h.channel, wait);
    EXPECT_TRUE(g.ok()) << g.status();
    out.push_back(g.ok() ? g->ids : std::vector<int32_t>{});
  }
  return out;
}

}  // namespace llmserve::testing
