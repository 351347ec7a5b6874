#include "server/http_generation.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <utility>
#include <variant>

#include "server/http_connection.h"

namespace llmserve {

struct HttpGeneration::Wakeup {
  int fd = -1;
  ~Wakeup() {
    if (fd >= 0) close(fd);
  }
};

absl::StatusOr<std::unique_ptr<HttpGeneration>> HttpGeneration::Start(Engine& engine, EngineRequest request,
                                                                       std::atomic<int64_t>* open) {
  auto wakeup = std::make_shared<Wakeup>();
  wakeup->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wakeup->fd < 0) return absl::UnavailableError("the server is out of file descriptors: try again shortly");
  absl::StatusOr<RequestHandle> handle = engine.Submit(std::move(request));
  if (!handle.ok()) return handle.status();
  // Engine thread, no channel lock held: one 8-byte write.
  handle->channel->SetNotifier([wakeup] {
    const uint64_t one = 1;
    (void)!write(wakeup->fd, &one, sizeof(one));
  });
  return std::unique_ptr<HttpGeneration>(new HttpGeneration(engine, *std::move(handle), std::move(wakeup), open));
}

HttpGeneration::HttpGeneration(Engine& engine, RequestHandle handle, std::shared_ptr<Wakeup> wakeup,
                               std::atomic<int64_t>* open)
    : engine_(engine), handle_(std::move(handle)), wakeup_(std::move(wakeup)), open_(open) {
  open_->fetch_add(1);
}

HttpGeneration::~HttpGeneration() {
  Abort();
  handle_.channel->Close();  // drops the notifier and anything still queued
  open_->fetch_sub(1);
}

void HttpGeneration::Abort() {
  if (final_read_ || aborted_) return;
  aborted_ = true;
  engine_.Abort(handle_.id, SequenceState::kFinishedCancelled);
}

std::optional<ChannelEvent> HttpGeneration::Next(int socket_fd) {
  while (true) {
    std::optional<ChannelEvent> event = handle_.channel->TryPop();  // none: arms the notifier
    if (event.has_value()) {
      if (std::holds_alternative<GenerationFinal>(*event)) final_read_ = true;
      return event;
    }
    if (WaitReadableOrPeerClosed(wakeup_->fd, socket_fd, absl::InfiniteDuration()) == SocketWake::kPeerClosed) {
      Abort();
      return std::nullopt;
    }
    uint64_t count = 0;
    (void)!read(wakeup_->fd, &count, sizeof(count));  // reset; the channel says what arrived
  }
}

}  // namespace llmserve
