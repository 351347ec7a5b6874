#include "server/openai_service.h"

#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "httplib.h"
#include "model/tokenizer/utf8.h"
#include "server/http_connection.h"
#include "server/http_generation.h"
#include "server/http_status.h"
#include "server/openai_response.h"
#include "spdlog/spdlog.h"

namespace llmserve {
namespace {

using json = nlohmann::json;

constexpr char kJson[] = "application/json";

// The client's request id (X-Request-Id, at most kMaxRequestIdBytes of UTF-8), or "".
std::string ClientRequestId(const httplib::Request& req) {
  std::string id = req.get_header_value("X-Request-Id");
  if (id.size() > kMaxRequestIdBytes || !utf8::IsValid(id)) return "";
  return id;
}

// X-Request-Timeout: seconds the client will wait (the call's deadline, as gRPC's); 0 = none.
absl::StatusOr<absl::Time> Deadline(const httplib::Request& req) {
  if (!req.has_header("X-Request-Timeout")) return absl::InfiniteFuture();
  double seconds = 0;
  if (!absl::SimpleAtod(req.get_header_value("X-Request-Timeout"), &seconds) || !(seconds >= 0) ||
      seconds > 365 * 86400.0) {
    return absl::InvalidArgumentError("the X-Request-Timeout header must be a number of seconds >= 0");
  }
  return seconds == 0 ? absl::InfiniteFuture() : absl::Now() + absl::Seconds(seconds);
}

// One streamed response: the generation and what its chunks repeat.
struct Stream {
  std::unique_ptr<HttpGeneration> generation;
  OpenAiResponseContext ctx;
  int socket = -1;
  bool first = true;
  size_t text_offset = 0;
};

bool WriteEvent(httplib::DataSink& sink, const json& body) {
  const std::string event = absl::StrCat("data: ", DumpJson(body), "\n\n");
  return sink.write(event.data(), event.size());
}

// httplib's chunked provider, called until done() or false: writes one event per call.
bool StreamNext(Stream& s, httplib::DataSink& sink) {
  while (true) {
    std::optional<ChannelEvent> event = s.generation->Next(s.socket);
    if (!event.has_value()) return false;  // the client went away (aborted)
    if (auto* delta = std::get_if<GenerationDelta>(&*event)) {
      // Bytes of a character held back: nothing to say yet, unless the ids are wanted.
      if (delta->text.empty() && delta->logprobs.empty() && !(s.ctx.token_ids && !delta->ids.empty())) continue;
      const bool ok = WriteEvent(sink, ChunkBody(s.ctx, *delta, s.first, &s.text_offset));
      s.first = false;
      return ok;
    }
    const GenerationFinal& final_event = std::get<GenerationFinal>(*event);
    bool ok = true;
    if (absl::Status status = FinalCallStatus(final_event); !status.ok()) {
      ok = WriteEvent(sink, ToHttpError(status).body);
    } else {
      ok = WriteEvent(sink, FinishChunkBody(s.ctx, final_event));
      if (ok && s.ctx.include_usage) ok = WriteEvent(sink, UsageChunkBody(s.ctx, final_event));
    }
    static constexpr std::string_view kDone = "data: [DONE]\n\n";
    if (ok) ok = sink.write(kDone.data(), kDone.size());
    if (ok) sink.done();
    return ok;
  }
}

}  // namespace

void WriteError(const absl::Status& status, httplib::Response& res) {
  const HttpError error = ToHttpError(status);
  res.status = error.status;
  res.set_content(DumpJson(error.body), kJson);
}

OpenAiService::OpenAiService(Engine& engine, const Tokenizer& tokenizer, RequestLimits limits,
                             std::string model_name, int64_t created, Metrics* metrics)
    : engine_(engine),
      tokenizer_(tokenizer),
      limits_(std::move(limits)),
      model_name_(std::move(model_name)),
      created_(created),
      metrics_(metrics) {}

absl::StatusOr<EngineRequest> OpenAiService::ToEngine(const OpenAiRequest& parsed, const httplib::Request& req) {
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
  absl::StatusOr<EngineRequest> er = ToEngineRequest(input, tokenizer_, limits_, fallback);
  if (!er.ok()) return er.status();
  er->deadline = *deadline;
  return er;
}

void OpenAiService::Generate(OpenAiEndpoint endpoint, const httplib::Request& req, httplib::Response& res) {
  const int64_t created = absl::ToUnixSeconds(absl::Now());
  absl::StatusOr<OpenAiRequest> parsed = ParseOpenAiRequest(endpoint, req.body);
  absl::StatusOr<EngineRequest> er = parsed.ok() ? ToEngine(*parsed, req) : parsed.status();
  const std::string request_id = er.ok() ? er->request_id : "";
  absl::StatusOr<std::unique_ptr<HttpGeneration>> generation =
      er.ok() ? HttpGeneration::Start(engine_, *std::move(er), &open_) : er.status();
  if (!generation.ok()) {
    if (metrics_ != nullptr && generation.status().code() != absl::StatusCode::kNotFound) {
      metrics_->RecordRejected(generation.status().code());
    }
    spdlog::debug("HTTP {} refused: {}", req.path, generation.status().ToString());
    WriteError(generation.status(), res);
    return;
  }
  const bool chat = endpoint == OpenAiEndpoint::kChatCompletions;
  OpenAiResponseContext ctx;
  ctx.endpoint = endpoint;
  ctx.id = absl::StrCat(chat ? "chatcmpl-" : "cmpl-", request_id);
  ctx.created = created;
  ctx.model = model_name_;
  ctx.logprobs = parsed->logprobs;
  ctx.include_usage = parsed->include_usage;
  ctx.token_ids = parsed->return_token_ids;
  ctx.tokenizer = &tokenizer_;
  res.set_header("X-Request-Id", request_id);
  const int socket = ConnectionSocket(req);

  if (parsed->stream) {
    auto stream = std::make_shared<Stream>();
    stream->generation = *std::move(generation);
    stream->ctx = std::move(ctx);
    stream->socket = socket;
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream", [stream](size_t, httplib::DataSink& sink) { return StreamNext(*stream, sink); },
        [stream](bool success) {
          if (!success) stream->generation->Abort();  // a write failed or the client left
        });
    return;
  }
  GenerationDelta all;
  while (true) {
    std::optional<ChannelEvent> event = (*generation)->Next(socket);
    if (!event.has_value()) {  // the client went away: nobody reads an answer
      WriteError(absl::CancelledError("the client closed the connection"), res);
      return;
    }
    if (auto* delta = std::get_if<GenerationDelta>(&*event)) {
      all.Merge(std::move(*delta));
      continue;
    }
    const GenerationFinal& final_event = std::get<GenerationFinal>(*event);
    if (absl::Status status = FinalCallStatus(final_event); !status.ok()) {
      WriteError(status, res);
    } else {
      res.set_content(DumpJson(CompletionBody(ctx, all, final_event)), kJson);
    }
    return;
  }
}

void OpenAiService::Models(const std::string& id, httplib::Response& res) const {
  const json model = {{"id", model_name_},
                      {"object", "model"},
                      {"created", created_},
                      {"owned_by", "llmserve"},
                      {"max_model_len", limits_.max_context}};
  if (id.empty()) {
    res.set_content(DumpJson({{"object", "list"}, {"data", json::array({model})}}), kJson);
  } else if (id == model_name_) {
    res.set_content(DumpJson(model), kJson);
  } else {
    WriteError(WithParam(absl::NotFoundError(absl::StrCat("The model `", id, "` does not exist")), "model"), res);
  }
}

}  // namespace llmserve
