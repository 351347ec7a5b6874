#include "server/openai_service.h"

#include <memory>
#include <optional>
#include <utility>
#include <variant>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "model/tokenizer/utf8.h"
#include "server/http_status.h"
#include "server/openai_generation.h"
#include "server/openai_response.h"
#include "spdlog/spdlog.h"

namespace llmserve {
namespace {

using json = nlohmann::json;

constexpr char kJson[] = "application/json";

// The client's request id (X-Request-Id, at most kMaxRequestIdBytes of UTF-8), or "".
std::string ClientRequestId(const http::HttpRequest& req) {
  std::string id(req.Header("X-Request-Id"));
  if (id.size() > kMaxRequestIdBytes || !utf8::IsValid(id)) return "";
  return id;
}

// X-Request-Timeout: seconds the client will wait (the call's deadline, as gRPC's); 0 = none.
absl::StatusOr<absl::Time> Deadline(const http::HttpRequest& req) {
  if (!req.HasHeader("X-Request-Timeout")) return absl::InfiniteFuture();
  double seconds = 0;
  const std::string_view value = req.Header("X-Request-Timeout");
  if (!absl::SimpleAtod(absl::string_view(value.data(), value.size()), &seconds) || !(seconds >= 0) ||
      seconds > 365 * 86400.0) {
    return absl::InvalidArgumentError("the X-Request-Timeout header must be a number of seconds >= 0");
  }
  return seconds == 0 ? absl::InfiniteFuture() : absl::Now() + absl::Seconds(seconds);
}

}  // namespace

http::HttpResponse ErrorResponse(const absl::Status& status) {
  const HttpError error = ToHttpError(status);
  http::HttpResponse res;
  res.status = error.status;
  res.content_type = kJson;
  res.body = DumpJson(error.body);
  return res;
}

http::HttpResponse JsonResponse(std::string body) {
  http::HttpResponse res;
  res.content_type = kJson;
  res.body = std::move(body);
  return res;
}

OpenAiService::OpenAiService(Engine& engine, const Tokenizer& tokenizer, RequestLimits limits,
                             std::string model_name, int64_t created, Metrics* metrics)
    : engine_(engine),
      tokenizer_(tokenizer),
      limits_(std::move(limits)),
      model_name_(std::move(model_name)),
      created_(created),
      metrics_(metrics) {}

absl::StatusOr<EngineRequest> OpenAiService::ToEngine(const OpenAiRequest& parsed, const http::HttpRequest& req) {
  if (!parsed.model.empty() && parsed.model != model_name_) {
    return WithParam(absl::NotFoundError(absl::StrCat("The model `", parsed.model,
                                                      "` does not exist: this server serves `", model_name_, "`")),
                     "model");
  }
  absl::StatusOr<absl::Time> deadline = Deadline(req);
  if (!deadline.ok()) return deadline.status();
  const std::string fallback = absl::StrCat("http-", next_request_number_.fetch_add(1));
  GenerationInput input = parsed.input;  // its errors name the OpenAI fields (input.names)
  input.request_id = ClientRequestId(req);
  ConstraintCompileReport compiled;
  absl::StatusOr<EngineRequest> er = ToEngineRequest(input, tokenizer_, limits_, fallback, &compiled);
  if (compiled.attempted && metrics_ != nullptr) {
    metrics_->RecordConstraintCompile(compiled.kind, compiled.cache_hit, compiled.time);
  }
  if (!er.ok()) return er.status();
  er->deadline = *deadline;
  return er;
}

http::HttpAnswer OpenAiService::Generate(OpenAiEndpoint endpoint, const http::HttpRequest& req) {
  const int64_t created = absl::ToUnixSeconds(absl::Now());
  absl::StatusOr<OpenAiRequest> parsed = ParseOpenAiRequest(endpoint, req.body);
  absl::StatusOr<EngineRequest> er = parsed.ok() ? ToEngine(*parsed, req) : parsed.status();
  if (!er.ok()) return Refused(er.status(), req);
  const bool chat = endpoint == OpenAiEndpoint::kChatCompletions;
  OpenAiResponseContext ctx;
  ctx.endpoint = endpoint;
  ctx.id = absl::StrCat(chat ? "chatcmpl-" : "cmpl-", er->request_id);
  ctx.created = created;
  ctx.model = model_name_;
  ctx.logprobs = parsed->logprobs;
  ctx.include_usage = parsed->include_usage;
  ctx.token_ids = parsed->return_token_ids;
  ctx.tokenizer = &tokenizer_;
  absl::StatusOr<std::unique_ptr<OpenAiGeneration>> generation =
      OpenAiGeneration::Submit(engine_, *std::move(er), std::move(ctx), parsed->stream, &open_);
  if (!generation.ok()) return Refused(generation.status(), req);
  return std::unique_ptr<http::HttpProducer>(*std::move(generation));
}

http::HttpResponse OpenAiService::Refused(const absl::Status& status, const http::HttpRequest& req) const {
  if (metrics_ != nullptr && status.code() != absl::StatusCode::kNotFound) {
    metrics_->RecordRejected(RefusalCode(status));
  }
  spdlog::debug("HTTP {} refused: {}", req.path, status.ToString());
  return ErrorResponse(status);
}

http::HttpResponse OpenAiService::Models(const std::string& id) const {
  const json model = {{"id", model_name_},
                      {"object", "model"},
                      {"created", created_},
                      {"owned_by", "llmserve"},
                      {"max_model_len", limits_.max_context}};
  if (id.empty()) return JsonResponse(DumpJson({{"object", "list"}, {"data", json::array({model})}}));
  if (id == model_name_) return JsonResponse(DumpJson(model));
  return ErrorResponse(WithParam(absl::NotFoundError(absl::StrCat("The model `", id, "` does not exist")), "model"));
}

}  // namespace llmserve
