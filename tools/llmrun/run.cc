#include "tools/llmrun/run.h"

#include <algorithm>
#include <atomic>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "model/end_of_generation.h"
#include "model/greedy_runner.h"
#include "model/transformer.h"
#include "nlohmann/json.hpp"
#include "scheduler/engine.h"
#include "server/engine_setup.h"
#include "tools/prompts_file.h"

namespace llmserve::llmrun {
namespace {

// The continuation's text for the direct path: Decode(prompt + generated) minus
// Decode(prompt) when the latter is a prefix (keeps a leading space SentencePiece would
// drop from the continuation alone), else Decode(generated).
std::string ContinuationText(const Tokenizer& tok, const std::vector<int32_t>& prompt,
                             const std::vector<int32_t>& generated) {
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), generated.begin(), generated.end());
  const std::string full = tok.Decode(all), head = tok.Decode(prompt);
  if (full.compare(0, head.size(), head) == 0) return full.substr(head.size());
  return tok.Decode(generated);
}

std::string Dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

int Fail(const absl::Status& status) {
  std::cerr << "llmrun: " << status.ToString() << "\n";
  return 1;
}

// "eos", "stop_token", "stop_string", "length", "cancelled", "deadline", "error".
std::string FinishName(SequenceState s) {
  std::string name = SequenceStateName(s);
  if (name.rfind("finished_", 0) == 0) name = name.substr(9);
  return name;
}

// Direct greedy path (--top-logits): RunGreedy on the forward pass.
int RunDirect(const Args& args, ModelWeights& weights, const Tokenizer& tok,
              const std::vector<std::vector<int32_t>>& prompts, const std::vector<int32_t>& stop_ids) {
  const RuntimeConfig runtime = RuntimeConfigFor(args.spec);
  if (absl::Status s = runtime.Validate(); !s.ok()) return Fail(s);
  auto model = Transformer::Create(weights, runtime);
  if (!model.ok()) return Fail(model.status());
  GreedyOptions opt;
  opt.max_tokens = args.max_tokens;
  opt.prefill_chunk = args.spec.max_prefill_chunk;
  opt.block_size = args.spec.block_size;
  opt.kv_dtype = runtime.kv_dtype;
  opt.top_logits = args.top_logits;
  opt.batch = args.batch;
  opt.stop_ids = stop_ids;
  auto results = RunGreedy(**model, prompts, opt);
  if (!results.ok()) return Fail(results.status());
  std::string out;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const GreedyResult& r = (*results)[i];
    nlohmann::ordered_json j;  // keys in the documented order
    j["prompt_ids"] = prompts[i];
    j["generated_ids"] = r.generated;
    j["text"] = ContinuationText(tok, prompts[i], r.generated);
    nlohmann::ordered_json top = nlohmann::ordered_json::array();
    for (const auto& [id, logit] : r.top_logits) top.push_back({id, logit});
    j["top_logits"] = std::move(top);
    out += Dump(j);
  }
  std::cout << out << std::flush;
  return 0;
}

// Engine path: every prompt a request; --concurrency of them in flight at a time.
int RunEngine(const Args& args, ModelWeights& weights, const Tokenizer& tok,
              const std::vector<std::vector<int32_t>>& prompts, const std::vector<int32_t>& extra_stops) {
  const ModelConfig config = weights.config;
  // llmrun queues every prompt it is given (--batch: all at once), beyond --max-waiting if
  // need be; otherwise the engine is the server's for the same flags.
  EngineSpec spec = args.spec;
  spec.max_waiting = std::max<int64_t>(spec.max_waiting, static_cast<int64_t>(prompts.size()));
  auto engine = BuildEngine(spec, weights, tok);
  if (!engine.ok()) return Fail(engine.status());
  const SchedulerConfig& sc = engine->engine->config().scheduler;
  engine->engine->Start();

  std::vector<absl::StatusOr<CollectedGeneration>> results(prompts.size(),
                                                                     absl::UnknownError("not run"));
  std::atomic<size_t> next{0};
  const size_t workers = args.batch ? prompts.size() : std::min<size_t>(static_cast<size_t>(args.concurrency), prompts.size());
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      for (size_t i = next.fetch_add(1); i < prompts.size(); i = next.fetch_add(1)) {
        EngineRequest req;
        req.request_id = absl::StrCat("prompt-", i + 1);
        req.prompt = prompts[i];
        req.sampling = args.sampling;
        req.stop.max_tokens = static_cast<int32_t>(
            std::max<int64_t>(1, std::min<int64_t>(args.max_tokens, config.context_length - static_cast<int64_t>(prompts[i].size()))));
        req.stop.ignore_eos = args.ignore_eos;
        req.stop.stop_strings = args.stop_strings;
        req.stop.stop_token_ids = args.stop_ids;
        if (!args.ignore_eos) req.stop.stop_token_ids.insert(req.stop.stop_token_ids.end(), extra_stops.begin(), extra_stops.end());
        auto handle = engine->engine->Submit(std::move(req));
        if (!handle.ok()) {
          results[i] = absl::Status(handle.status().code(), absl::StrCat("prompt ", i + 1, ": ", handle.status().message()));
          continue;
        }
        results[i] = CollectGeneration(*handle->channel, absl::InfiniteDuration());
      }
    });
  }
  for (auto& t : threads) t.join();
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  const EngineStats stats = engine->engine->Stats();
  engine->engine->Stop();

  std::string out;
  int64_t generated = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (!results[i].ok()) return Fail(results[i].status());
    const CollectedGeneration& r = *results[i];
    if (r.final_event.reason == SequenceState::kFinishedError) return Fail(r.final_event.status);
    generated += static_cast<int64_t>(r.ids.size());
    nlohmann::ordered_json j;  // keys in the documented order
    j["prompt_ids"] = prompts[i];
    j["generated_ids"] = r.ids;
    j["text"] = r.text;
    j["finish_reason"] = FinishName(r.final_event.reason);
    if (!r.final_event.stop_string.empty()) j["stop_string"] = r.final_event.stop_string;
    j["seed"] = r.final_event.seed;
    j["preemptions"] = r.final_event.preemptions;
    if (args.sampling.want_logprobs) {
      nlohmann::ordered_json lps = nlohmann::ordered_json::array();
      for (const TokenLogprobs& lp : r.logprobs) {
        nlohmann::ordered_json top = nlohmann::ordered_json::array();
        for (const auto& [id, v] : lp.top) top.push_back({id, v});
        lps.push_back({lp.id, lp.logprob, std::move(top)});
      }
      j["logprobs"] = std::move(lps);
    }
    out += Dump(j);
  }
  std::cout << out << std::flush;
  std::cerr << "llmrun: " << prompts.size() << " prompts, " << generated << " tokens generated in " << wall << " s ("
            << (wall > 0 ? static_cast<double>(generated) / wall : 0.0) << " tok/s); " << stats.steps << " steps, "
            << stats.preemptions << " preemptions, " << sc.num_blocks << " KV blocks of " << sc.block_size << "\n";
  return 0;
}

}  // namespace

int Run(const Args& args) {
  auto loaded = LoadModelFiles(args.spec);
  if (!loaded.ok()) return Fail(loaded.status());
  const std::unique_ptr<Tokenizer>& tok = loaded->tokenizer;
  ModelWeights& weights = *loaded->weights;
  const ModelConfig& config = weights.config;
  const bool llama2c = config.format == "llama2c";

  std::vector<std::string> texts = args.prompts;
  if (!args.prompts_file.empty()) {
    auto read = ReadPromptsFile(args.prompts_file);
    if (!read.ok()) return Fail(read.status());
    texts = *std::move(read);
  }
  EncodeOptions enc;
  enc.add_bos = llama2c || tok->add_bos_default();
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < texts.size(); ++i) {
    auto ids = tok->Encode(texts[i], enc);
    if (!ids.ok()) return Fail(absl::InvalidArgumentError(absl::StrCat("prompt ", i + 1, ": ", ids.status().message())));
    if (ids->empty()) return Fail(absl::InvalidArgumentError(absl::StrCat("prompt ", i + 1, " has no tokens")));
    prompts.push_back(*std::move(ids));
  }

  // The model's end-of-generation ids (the tokenizer's EOS among them), and for llama2.c
  // BOS (a new story).
  const std::vector<int32_t> eos_ids = EndOfGenerationIds(config, *tok);
  std::vector<int32_t> extra_stops;
  if (llama2c && std::find(eos_ids.begin(), eos_ids.end(), 1) == eos_ids.end()) extra_stops.push_back(1);
  if (args.top_logits > 0) {
    std::vector<int32_t> stops = extra_stops;
    stops.insert(stops.end(), eos_ids.begin(), eos_ids.end());
    return RunDirect(args, weights, *tok, prompts, stops);
  }
  return RunEngine(args, weights, *tok, prompts, extra_stops);
}

}  // namespace llmserve::llmrun
