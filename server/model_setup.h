// SetUpModel: from a ServerConfig to a ready (not yet started) Engine, its chat template
// and what the service reports.
//
//   --model ""   → the built-in demo model (server/demo_model.h)
//   --model PATH → LoadModel(PATH) + LoadTokenizer(--tokenizer, else PATH itself)
//   → BuildEngine (server/engine_setup.h: Transformer, KvCache, Engine; shared with
//     llmrun and engine_bench) → SetUpChat → ServiceInfo and the startup summary
//
// The file weights are released once the transformer has packed its own copies.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/chat/chat_prompt.h"
#include "model/model_weights.h"
#include "model/tokenizer/tokenizer.h"
#include "scheduler/engine.h"
#include "server/llm_service.h"
#include "server/server_config.h"

namespace llmserve {

// The llmserve version GetServerInfo reports (keep in step with CMakeLists.txt's project()).
inline constexpr char kLlmserveVersion[] = "0.1.0";

struct ModelSetup {
  std::unique_ptr<Tokenizer> tokenizer;  // declared before the engine: outlives it
  std::unique_ptr<ChatPrompter> chat;    // the chat template (null: none); info.chat points here
  std::unique_ptr<Engine> engine;        // created, not started
  ServiceInfo info;                      // for LlmService
  bool demo = false;                     // the built-in demo model
  int32_t num_blocks = 0;                // KV blocks in the cache
  std::string summary;                   // model and engine settings, for the startup log line
};

// Loads and builds everything; `observer` (may be null, must outlive the engine) becomes
// the engine's. Errors carry the loader's message (which names the file):
// NOT_FOUND for a missing path, INVALID_ARGUMENT for a corrupt or unsupported file.
absl::StatusOr<ModelSetup> SetUpModel(const ServerConfig& config, EngineObserver* observer = nullptr);

// The name the model is served under: --model-name, else "demo" for the built-in
// model, else ModelNameFromPath (known before the model loads).
std::string ServedModelName(const ServerConfig& config);

// The served name for a model path: the file name without extension, or the
// directory's name ("models/stories15M.bin" -> "stories15M").
std::string ModelNameFromPath(const std::string& path);

// Total elements of every tensor (tied embeddings count once).
int64_t CountParameters(const ModelWeights& weights);

}  // namespace llmserve
