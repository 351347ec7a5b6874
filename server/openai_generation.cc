#include "server/openai_generation.h"

#include <string_view>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "server/http_status.h"
#include "server/request_convert.h"

namespace llmserve {
namespace {

constexpr char kJson[] = "application/json";
constexpr std::string_view kDone = "data: [DONE]\n\n";

void AppendEvent(const nlohmann::json& body, std::string* out) { absl::StrAppend(out, "data: ", DumpJson(body), "\n\n"); }

}  // namespace

absl::StatusOr<std::unique_ptr<OpenAiGeneration>> OpenAiGeneration::Submit(Engine& engine, EngineRequest request,
                                                                           OpenAiResponseContext ctx, bool stream,
                                                                           std::atomic<int64_t>* open) {
  std::string request_id = request.request_id;
  absl::StatusOr<RequestHandle> handle = engine.Submit(std::move(request));
  if (!handle.ok()) return handle.status();
  return std::unique_ptr<OpenAiGeneration>(
      new OpenAiGeneration(engine, *std::move(handle), std::move(request_id), std::move(ctx), stream, open));
}

OpenAiGeneration::OpenAiGeneration(Engine& engine, RequestHandle handle, std::string request_id,
                                   OpenAiResponseContext ctx, bool stream, std::atomic<int64_t>* open)
    : engine_(engine),
      handle_(std::move(handle)),
      request_id_(std::move(request_id)),
      ctx_(std::move(ctx)),
      stream_(stream),
      open_(open) {
  open_->fetch_add(1);
}

OpenAiGeneration::~OpenAiGeneration() {
  Abort();
  handle_.channel->Close();  // drops the notifier and anything still queued
  open_->fetch_sub(1);
}

void OpenAiGeneration::Start(std::function<void()> wake) {
  // Engine thread, no channel lock held: `wake` posts to the connection's strand.
  handle_.channel->SetNotifier(std::move(wake));
}

void OpenAiGeneration::ClientGone() { Abort(); }

void OpenAiGeneration::Abort() {
  if (final_read_ || aborted_) return;
  aborted_ = true;
  engine_.Abort(handle_.id, SequenceState::kFinishedCancelled);
}

http::HttpResponse OpenAiGeneration::Head(int status, std::string content_type) const {
  http::HttpResponse head;
  head.status = status;
  head.content_type = std::move(content_type);
  head.headers.push_back({"X-Request-Id", request_id_});
  return head;
}

std::optional<http::HttpPiece> OpenAiGeneration::Next() { return stream_ ? NextStreamed() : NextWhole(); }

std::optional<http::HttpPiece> OpenAiGeneration::NextStreamed() {
  http::HttpPiece piece;
  if (!head_sent_) {  // the head at once: the client knows it was accepted
    head_sent_ = true;
    piece.head = Head(200, "text/event-stream");
    piece.head->stream = true;
    piece.head->headers.push_back({"Cache-Control", "no-cache"});
  }
  // Everything queued goes out in one write.
  while (std::optional<ChannelEvent> event = handle_.channel->TryPop()) {
    if (auto* delta = std::get_if<GenerationDelta>(&*event)) {
      // Bytes of a character held back: nothing to say yet, unless the ids are wanted.
      if (delta->text.empty() && delta->logprobs.empty() && !(ctx_.token_ids && !delta->ids.empty())) continue;
      AppendEvent(ChunkBody(ctx_, *delta, first_chunk_, &text_offset_), &piece.data);
      first_chunk_ = false;
      continue;
    }
    const GenerationFinal& final_event = std::get<GenerationFinal>(*event);
    final_read_ = true;
    if (absl::Status status = FinalCallStatus(final_event); !status.ok()) {
      AppendEvent(ToHttpError(status).body, &piece.data);
    } else {
      AppendEvent(FinishChunkBody(ctx_, final_event), &piece.data);
      if (ctx_.include_usage) AppendEvent(UsageChunkBody(ctx_, final_event), &piece.data);
    }
    piece.data.append(kDone);
    piece.last = true;
    break;
  }
  if (!piece.head.has_value() && piece.data.empty()) return std::nullopt;  // the notifier is armed
  return piece;
}

std::optional<http::HttpPiece> OpenAiGeneration::NextWhole() {
  while (std::optional<ChannelEvent> event = handle_.channel->TryPop()) {
    if (auto* delta = std::get_if<GenerationDelta>(&*event)) {
      merged_.Merge(std::move(*delta));
      continue;
    }
    const GenerationFinal& final_event = std::get<GenerationFinal>(*event);
    final_read_ = true;
    http::HttpPiece piece;
    if (absl::Status status = FinalCallStatus(final_event); !status.ok()) {
      const HttpError error = ToHttpError(status);
      piece.head = Head(error.status, kJson);
      piece.head->body = DumpJson(error.body);
    } else {
      piece.head = Head(200, kJson);
      piece.head->body = DumpJson(CompletionBody(ctx_, merged_, final_event));
    }
    piece.last = true;
    return piece;
  }
  return std::nullopt;  // the notifier is armed
}

}  // namespace llmserve
