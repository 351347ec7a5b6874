// LlmService: Generate hands each call to a GenerateReactor (generate_reactor.h); the unary
// methods answer inline on the gRPC thread (no engine round trip: Stats() is a snapshot).
#include "server/llm_service.h"

#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "server/generate_reactor.h"
#include "server/proto_wire.h"
#include "server/request_convert.h"
#include "server/status_convert.h"

namespace llmserve {

LlmService::LlmService(Engine& engine, const Tokenizer& tokenizer, ServiceInfo info, Metrics* metrics)
    : engine_(engine), tokenizer_(tokenizer), info_(std::move(info)), metrics_(metrics) {
  limits_.vocab_size = engine_.model().vocab_size();
  limits_.max_context = engine_.config().scheduler.max_context;
  limits_.sampling_defaults = DefaultSamplingParams(info_.config.generation);
  limits_.chat = info_.chat;
  limits_.max_prompt_bytes = info_.max_prompt_bytes;
  limits_.constraints = engine_.constraints();
}

LlmService::~LlmService() { pump_->Stop(); }

grpc::ServerWriteReactor<grpc::ByteBuffer>* LlmService::Generate(grpc::CallbackServerContext* ctx,
                                                                 const grpc::ByteBuffer* request) {
  GenerateReactor::Deps deps{&engine_, &tokenizer_, &limits_, &open_streams_, metrics_, pump_};
  return GenerateReactor::Start(ctx, *request, deps, next_request_number_.fetch_add(1));
}

namespace {

// Parses the raw request as Req, has `fill` answer it into a Resp, serializes that into
// `response` and finishes the call with the first error, if any.
template <class Req, class Resp, class F>
grpc::ServerUnaryReactor* AnswerUnary(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response, F&& fill) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  Req req;
  Resp resp;
  absl::Status s = RequestArrived(*request);
  if (s.ok()) s = ParseRequest(*request, &req);
  if (s.ok()) s = fill(req, &resp);
  if (s.ok()) s = SerializeResponse(resp, response);
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* LlmService::Tokenize(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                               grpc::ByteBuffer* response) {
  return AnswerUnary<llmserve::v1::TokenizeRequest, llmserve::v1::TokenizeResponse>(
      ctx, request, response,
      [&](const auto& req, auto* resp) { return FillTokenize(req, tokenizer_, limits_.max_prompt_bytes, resp); });
}

grpc::ServerUnaryReactor* LlmService::ApplyChatTemplate(grpc::CallbackServerContext* ctx,
                                                        const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  return AnswerUnary<llmserve::v1::ApplyChatTemplateRequest, llmserve::v1::ApplyChatTemplateResponse>(
      ctx, request, response, [&](const auto& req, auto* resp) -> absl::Status {
        absl::StatusOr<RenderedChat> rendered = RenderChat(ChatFromProto(req.chat()), GrpcFieldNames(), limits_);
        if (!rendered.ok()) return rendered.status();
        resp->set_text(std::move(rendered->text));
        resp->mutable_ids()->Add(rendered->ids.begin(), rendered->ids.end());
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* LlmService::Detokenize(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                 grpc::ByteBuffer* response) {
  return AnswerUnary<llmserve::v1::DetokenizeRequest, llmserve::v1::DetokenizeResponse>(
      ctx, request, response, [&](const auto& req, auto* resp) { return FillDetokenize(req, tokenizer_, resp); });
}

grpc::ServerUnaryReactor* LlmService::GetModelInfo(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                   grpc::ByteBuffer* response) {
  return AnswerUnary<llmserve::v1::GetModelInfoRequest, llmserve::v1::ModelInfo>(
      ctx, request, response, [&](const auto&, auto* resp) {
        FillModelInfo(resp);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* LlmService::GetServerInfo(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                                    grpc::ByteBuffer* response) {
  return AnswerUnary<llmserve::v1::GetServerInfoRequest, llmserve::v1::ServerInfo>(
      ctx, request, response, [&](const auto&, auto* resp) {
        FillServerInfo(resp);
        return absl::OkStatus();
      });
}

void LlmService::FillModelInfo(llmserve::v1::ModelInfo* response) const {
  const ModelConfig& c = info_.config;
  response->set_name(info_.model_name.empty() ? c.name : info_.model_name);
  const absl::string_view arch = ArchitectureName(c.arch);
  response->set_architecture(std::string(arch.data(), arch.size()));
  response->set_vocab_size(engine_.model().vocab_size());
  // The limit requests are held to (the model's, unless the server configured less).
  response->set_context_length(engine_.config().scheduler.max_context);
  const absl::string_view kd = DTypeName(info_.kv_dtype);
  response->set_weight_dtype(info_.weight_dtype);
  response->set_kv_dtype(std::string(kd.data(), kd.size()));
  response->set_bos_id(tokenizer_.bos_id());
  response->set_eos_id(tokenizer_.eos_id());
  response->set_num_parameters(info_.num_parameters);
  response->set_num_layers(static_cast<int32_t>(c.num_layers));
  response->set_hidden_size(static_cast<int32_t>(c.hidden_size));
  response->set_num_heads(static_cast<int32_t>(c.num_heads));
  response->set_num_kv_heads(static_cast<int32_t>(c.num_kv_heads));
  response->set_chat_template_source(info_.chat_template_source);
  const auto& eos = engine_.config().scheduler.eos_ids;
  response->mutable_eos_ids()->Add(eos.begin(), eos.end());
  const SamplingParams& d = limits_.sampling_defaults;
  llmserve::v1::SamplingDefaults* sd = response->mutable_sampling_defaults();
  sd->set_temperature(d.temperature);
  sd->set_top_k(d.top_k);
  sd->set_top_p(d.top_p);
  sd->set_min_p(d.min_p);
  sd->set_repetition_penalty(d.repetition_penalty);
  const GenerationDefaults& g = c.generation;
  for (auto [name, set] : {std::pair{"temperature", g.temperature.has_value()}, std::pair{"top_k", g.top_k.has_value()},
                           std::pair{"top_p", g.top_p.has_value()}, std::pair{"min_p", g.min_p.has_value()},
                           std::pair{"repetition_penalty", g.repetition_penalty.has_value()}}) {
    if (set) sd->add_from_model(name);
  }
}

void LlmService::FillServerInfo(llmserve::v1::ServerInfo* response) const {
  const EngineStats s = engine_.Stats();
  const SchedulerConfig& sc = engine_.config().scheduler;
  response->set_running_requests(s.running);
  response->set_waiting_requests(s.waiting);
  response->set_kv_blocks_total(s.blocks_total);
  response->set_kv_blocks_used(s.blocks_used);
  response->set_block_size(s.block_size);
  response->set_uptime_seconds(absl::ToDoubleSeconds(absl::Now() - info_.start_time));
  response->set_version(info_.version);
  response->set_preemptions_total(s.preemptions);
  response->set_max_running(sc.max_running);
  response->set_max_waiting(sc.max_waiting);
  response->set_max_batched_tokens(sc.max_batched_tokens);
  response->set_step_policy(StepPolicyName(sc.step_policy));
  response->set_draining(s.draining);
  response->set_kv_blocks_cached(s.blocks_cached);
  response->set_prefix_caching(s.prefix_caching);
}

}  // namespace llmserve
