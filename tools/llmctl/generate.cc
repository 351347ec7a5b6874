// llmctl generate: one streaming Generate call. Text to stdout as it arrives, a summary
// to stderr at the end; Ctrl-C cancels the call.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/llmctl/commands.h"
#include "llmserve/v1/llmserve.grpc.pb.h"

namespace llmctl {
namespace {

namespace v1 = llmserve::v1;

// FINISH_REASON_LENGTH -> "LENGTH".
std::string ReasonName(v1::FinishReason reason) {
  std::string name = v1::FinishReason_Name(reason);
  constexpr absl::string_view kPrefix = "FINISH_REASON_";
  if (name.rfind(std::string(kPrefix), 0) == 0) name = name.substr(kPrefix.size());
  return name.empty() ? absl::StrCat(static_cast<int>(reason)) : name;
}

// What the stream showed so far (for the summary and for separating stderr lines).
struct StreamState {
  bool have_final = false;
  v1::Final final;
  bool text_open = false;  // stdout has text not ending in '\n'
  int logprob_count = 0;
  double logprob_sum = 0;
};

void PrintChunk(const v1::Chunk& chunk, StreamState* state) {
  if (!chunk.text().empty()) {
    std::fwrite(chunk.text().data(), 1, chunk.text().size(), stdout);
    std::fflush(stdout);
    state->text_open = chunk.text().back() != '\n';
  }
  for (const v1::TokenLogprob& lp : chunk.logprobs()) {
    state->logprob_sum += lp.logprob();
    ++state->logprob_count;
  }
}

// When stdout and stderr share a terminal, ends the text's line before stderr output.
void SeparateFromText(const StreamState& state) {
  if (state.text_open && isatty(STDOUT_FILENO) && isatty(STDERR_FILENO)) std::fputc('\n', stderr);
}

void PrintSummary(const StreamState& state) {
  const v1::Final& f = state.final;
  std::string reason = ReasonName(f.finish_reason());
  if (f.finish_reason() == v1::FINISH_REASON_STOP_SEQUENCE) absl::StrAppend(&reason, " ", Quote(f.stop_sequence()));
  if (f.finish_reason() == v1::FINISH_REASON_ERROR) absl::StrAppend(&reason, ": ", f.error());
  std::fprintf(stderr, "finish_reason: %s\n", reason.c_str());
  std::fprintf(stderr, "usage: prompt_tokens=%d completion_tokens=%d\n", f.usage().prompt_tokens(),
               f.usage().completion_tokens());
  const v1::Timings& t = f.timings();
  std::string rate;
  const double decode_seconds = t.total_seconds() - t.time_to_first_token_seconds();
  if (f.usage().completion_tokens() > 1 && decode_seconds > 0) {
    rate = absl::StrFormat(" (%.1f tokens/s after the first)", (f.usage().completion_tokens() - 1) / decode_seconds);
  }
  std::fprintf(stderr, "timings: queue=%.3fs first_token=%.3fs total=%.3fs%s\n", t.queue_seconds(),
               t.time_to_first_token_seconds(), t.total_seconds(), rate.c_str());
  std::fprintf(stderr, "seed: %llu\n", static_cast<unsigned long long>(f.seed()));
  std::fprintf(stderr, "request_id: %s\n", f.request_id().c_str());
  if (f.preemptions() > 0) std::fprintf(stderr, "preemptions: %d\n", f.preemptions());
  if (state.logprob_count > 0) {
    std::fprintf(stderr, "logprobs: sum=%.4f mean=%.4f over %d tokens\n", state.logprob_sum,
                 state.logprob_sum / state.logprob_count, state.logprob_count);
  }
}

// A stream that ended OK: 0 when generation finished normally.
int FinishedExitCode(const v1::Final& final) {
  switch (final.finish_reason()) {
    case v1::FINISH_REASON_ERROR:
    case v1::FINISH_REASON_CANCELLED:
    case v1::FINISH_REASON_DEADLINE:
    case v1::FINISH_REASON_UNSPECIFIED:
      return kExitFailure;
    default:
      return kExitOk;
  }
}

}  // namespace

int RunGenerate(const Client& client, const v1::GenerateRequest& request) {
  grpc::ClientContext ctx;
  PrepareCall(client, &ctx);
  auto stub = v1::LlmService::NewStub(client.channel);
  if (client.interrupts != nullptr) client.interrupts->Watch(&ctx);
  auto reader = stub->Generate(&ctx, request);
  StreamState state;
  v1::GenerateResponse message;
  while (reader->Read(&message)) {
    if (client.json) {
      std::printf("%s\n", ToJson(message).c_str());
      std::fflush(stdout);
    } else if (message.has_chunk()) {
      PrintChunk(message.chunk(), &state);
    }
    if (message.has_final()) {
      state.have_final = true;
      state.final = message.final();
    }
  }
  const grpc::Status status = reader->Finish();
  const int signal = client.interrupts != nullptr ? client.interrupts->Clear() : 0;
  if (!client.json) SeparateFromText(state);
  // A final message can precede a non-OK status (FINISH_REASON_ERROR ends with INTERNAL).
  if (state.have_final && !client.json) PrintSummary(state);
  if (!status.ok()) {
    PrintStatus(status);
    return signal != 0 ? 128 + signal : kExitFailure;
  }
  if (!state.have_final) {
    std::fprintf(stderr, "llmctl: the stream ended without a final message\n");
    return kExitFailure;
  }
  const int code = FinishedExitCode(state.final);
  if (code != kExitOk && client.json) {
    std::fprintf(stderr, "llmctl: generation ended with finish reason %s\n", ReasonName(state.final.finish_reason()).c_str());
  }
  return code;
}

}  // namespace llmctl
