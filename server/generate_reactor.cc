#include "server/generate_reactor.h"

#include <chrono>
#include <optional>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "llmserve/v1/llmserve.pb.h"
#include "server/proto_wire.h"
#include "server/request_convert.h"
#include "server/status_convert.h"
#include "spdlog/spdlog.h"

namespace llmserve {
namespace {

// A cancel this close to the call's deadline counts as the deadline: the client's timer
// fires first, the server's copy of the deadline is later by the request's transit.
constexpr absl::Duration kDeadlineSlack = absl::Milliseconds(250);

// The call's deadline (InfiniteFuture when the client set none).
absl::Time CallDeadline(const grpc::CallbackServerContext& ctx) {
  const std::chrono::system_clock::time_point d = ctx.deadline();
  if (d == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(d);
}

}  // namespace

GenerateReactor::GenerateReactor(grpc::CallbackServerContext* ctx, Deps deps) : ctx_(ctx), deps_(deps) {
  deps_.open_streams->fetch_add(1);
}

GenerateReactor::~GenerateReactor() {
  if (handle_.channel != nullptr) {
    handle_.channel->Close();  // drops the notifier and anything still queued
    bool abort = false;
    {
      std::lock_guard<std::mutex> l(mu_);
      abort = !final_popped_ && !aborted_;
    }
    // Normally OnCancel has aborted already; this covers a stream that broke without it.
    if (abort) deps_.engine->Abort(handle_.id, SequenceState::kFinishedCancelled);
  }
  deps_.open_streams->fetch_sub(1);
}

GenerateReactor* GenerateReactor::Start(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer& request,
                                        Deps deps, int64_t request_number) {
  auto* r = new GenerateReactor(ctx, deps);
  // Ends the call at once with `status` (nothing was submitted).
  auto refuse = [r](const absl::Status& status) {
    {
      std::lock_guard<std::mutex> l(r->mu_);
      r->finish_called_ = true;
    }
    r->Finish(ToGrpcStatus(status));
    return r;
  };
  absl::Status status = RequestArrived(request);
  if (!status.ok()) {
    if (deps.metrics != nullptr) deps.metrics->RecordAbortedBeforeRequest();
    spdlog::debug("Generate call {}: {}", request_number, std::string(status.message()));
    return refuse(status);
  }
  llmserve::v1::GenerateRequest req;
  status = ParseRequest(request, &req);
  if (status.ok()) {
    ConstraintCompileReport compiled;
    absl::StatusOr<EngineRequest> er =
        ToEngineRequest(FromGenerateRequest(req), *deps.tokenizer, *deps.limits,
                        absl::StrCat("req-", request_number), &compiled);
    if (compiled.attempted && deps.metrics != nullptr) {
      deps.metrics->RecordConstraintCompile(compiled.kind, compiled.cache_hit, compiled.time);
    }
    status = er.status();
    if (status.ok()) {
      er->deadline = CallDeadline(*ctx);
      r->request_id_ = er->request_id;
      absl::StatusOr<RequestHandle> h = deps.engine->Submit(*std::move(er));
      status = h.status();
      if (h.ok()) r->handle_ = *std::move(h);
    }
  }
  if (!status.ok()) {
    if (deps.metrics != nullptr) deps.metrics->RecordRejected(RefusalCode(status));
    spdlog::debug("Generate {} refused: {}", r->request_id_.empty() ? req.request_id() : r->request_id_,
                  status.ToString());
    return refuse(status);
  }
  r->link_ = std::make_shared<Link>();
  {
    std::lock_guard<std::mutex> l(r->link_->mu);
    r->link_->reactor = r;
  }
  // Engine thread (from PushDelta / PushFinal, no channel lock held), once per arming:
  // hands the pump to the StreamPump thread.
  r->handle_.channel->SetNotifier([link = r->link_, pump = deps.pump] {
    auto pump_link = [link] {
      GenerateReactor* target = nullptr;
      {
        std::lock_guard<std::mutex> l(link->mu);
        target = link->reactor;
        if (target == nullptr) return;  // gRPC is done with the call
        target->refs_.fetch_add(1);
      }
      target->Pump();
      target->Unref();
    };
    if (pump == nullptr || !pump->Post(pump_link)) pump_link();
  });
  r->Pump();
  return r;
}

void GenerateReactor::Pump() {
  std::optional<ChannelEvent> event;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (write_in_flight_ || final_popped_ || finish_called_ || cancelled_) return;
    event = handle_.channel->TryPop();
    if (!event.has_value()) return;  // the notifier is armed
    write_in_flight_ = true;
    if (const auto* f = std::get_if<GenerationFinal>(&*event)) {
      final_popped_ = true;
      final_status_ = FinalCallStatus(*f);
    }
  }
  // This thread owns out_ until OnWriteDone.
  llmserve::v1::GenerateResponse msg;
  if (auto* delta = std::get_if<GenerationDelta>(&*event)) {
    ToChunk(std::move(*delta), msg.mutable_chunk());
  } else {
    ToFinal(std::get<GenerationFinal>(*event), request_id_, msg.mutable_final());
  }
  if (absl::Status s = SerializeResponse(msg, &out_); !s.ok()) {
    bool abort = false;
    {
      std::lock_guard<std::mutex> l(mu_);
      write_in_flight_ = false;
      abort = !final_popped_ && !aborted_;
      aborted_ = true;
      if (finish_called_) return;
      finish_called_ = true;
    }
    if (abort) deps_.engine->Abort(handle_.id, SequenceState::kFinishedCancelled);
    Finish(ToGrpcStatus(s));
    return;
  }
  StartWrite(&out_);
}

void GenerateReactor::OnWriteDone(bool ok) {
  std::optional<absl::Status> finish;
  {
    std::lock_guard<std::mutex> l(mu_);
    write_in_flight_ = false;
    if (finish_called_) return;
    if (!ok || cancelled_) {
      finish = cancelled_ ? cancel_status_ : absl::CancelledError("the stream broke");
    } else if (final_popped_) {
      finish = final_status_;
    }
    if (finish.has_value()) finish_called_ = true;
  }
  if (finish.has_value()) {
    Finish(ToGrpcStatus(*finish));
  } else {
    Pump();
  }
}

void GenerateReactor::OnCancel() {
  const bool deadline = absl::Now() + kDeadlineSlack >= CallDeadline(*ctx_);
  bool abort = false;
  bool finish = false;
  absl::Status status;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    cancel_status_ = deadline ? absl::DeadlineExceededError("the call's deadline passed")
                              : absl::CancelledError("the call was cancelled");
    abort = handle_.channel != nullptr && !final_popped_ && !aborted_;
    if (abort) aborted_ = true;
    if (!write_in_flight_ && !finish_called_) {
      finish_called_ = true;
      finish = true;
      status = cancel_status_;
    }
  }
  // The engine frees the sequence's blocks at its next step boundary.
  if (abort) {
    deps_.engine->Abort(handle_.id, deadline ? SequenceState::kFinishedDeadline : SequenceState::kFinishedCancelled);
  }
  if (finish) Finish(ToGrpcStatus(status));
}

void GenerateReactor::OnDone() {
  if (link_ != nullptr) {
    std::lock_guard<std::mutex> l(link_->mu);
    link_->reactor = nullptr;
  }
  Unref();
}

void GenerateReactor::Unref() {
  if (refs_.fetch_sub(1) == 1) delete this;
}

}  // namespace llmserve
