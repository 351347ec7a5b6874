#include "scheduler/engine_model.h"

#include <thread>
#include <utility>

#include "model/runtime_config.h"

namespace llmserve {
namespace {

// A Transformer and its KvCache behind the EngineModel interface.
class TransformerEngineModel final : public EngineModel {
 public:
  TransformerEngineModel(std::unique_ptr<Transformer> model, std::unique_ptr<KvCache> cache, int threads)
      : model_(std::move(model)), cache_(std::move(cache)), threads_(threads) {}

  int32_t vocab_size() const override { return static_cast<int32_t>(model_->config().vocab_size); }
  int32_t max_context() const override { return static_cast<int32_t>(model_->config().context_length); }
  int32_t num_blocks() const override { return static_cast<int32_t>(cache_->config().num_blocks); }
  int32_t block_size() const override { return static_cast<int32_t>(cache_->config().block_size); }

  absl::Status Forward(const ForwardBatch& batch, float* logits) override {
    // OpenMP's thread count belongs to the calling thread: set it on the first call from
    // each thread (in the engine, once: the engine thread makes every call).
    const std::thread::id self = std::this_thread::get_id();
    if (!threads_applied_ || applied_on_ != self) {
      ApplyThreadCount(threads_);
      applied_on_ = self;
      threads_applied_ = true;
    }
    return model_->Forward(batch, *cache_, logits);
  }

 private:
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<KvCache> cache_;
  const int threads_;
  bool threads_applied_ = false;
  std::thread::id applied_on_;
};

}  // namespace

std::unique_ptr<EngineModel> MakeTransformerEngineModel(std::unique_ptr<Transformer> model,
                                                        std::unique_ptr<KvCache> cache, int threads) {
  if (model == nullptr || cache == nullptr) return nullptr;
  return std::make_unique<TransformerEngineModel>(std::move(model), std::move(cache), threads);
}

}  // namespace llmserve
