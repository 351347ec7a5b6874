// llmctl chat: an interactive conversation. Each line read from stdin is a user turn; the
// whole history goes to Generate as a chat input (the server applies the model's chat
// template) and the reply streams to stdout, then joins the history. "/reset" forgets the
// history, "/exit" or end of input quits; Ctrl-C stops a reply (and, at the prompt, quits).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "absl/strings/str_format.h"
#include "llmserve/v1/llmserve.grpc.pb.h"
#include "tools/llmctl/commands.h"

namespace llmctl {
namespace {

namespace v1 = llmserve::v1;

// Streams one reply; its text goes to `reply`. Returns false when the call failed.
bool StreamReply(const Client& client, v1::LlmService::Stub& stub, const v1::GenerateRequest& request,
                 std::string* reply, v1::Final* final) {
  grpc::ClientContext ctx;
  PrepareCall(client, &ctx);
  if (client.interrupts != nullptr) client.interrupts->Watch(&ctx);
  auto reader = stub.Generate(&ctx, request);
  v1::GenerateResponse message;
  while (reader->Read(&message)) {
    if (message.has_chunk()) {
      const std::string& text = message.chunk().text();
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      reply->append(text);
    } else if (message.has_final()) {
      *final = message.final();
    }
  }
  const grpc::Status status = reader->Finish();
  const int signal = client.interrupts != nullptr ? client.interrupts->Clear() : 0;
  std::fputc('\n', stdout);
  if (signal != 0) {
    std::fprintf(stderr, "[stopped]\n");
    return true;  // the partial reply stays in the history
  }
  if (!status.ok()) {
    PrintStatus(status);
    return false;
  }
  return true;
}

void PrintStats(const v1::Final& f) {
  const v1::Timings& t = f.timings();
  const double decode = t.total_seconds() - t.time_to_first_token_seconds();
  const int n = f.usage().completion_tokens();
  std::string reason = v1::FinishReason_Name(f.finish_reason());
  if (reason.rfind("FINISH_REASON_", 0) == 0) reason = reason.substr(14);
  std::fprintf(stderr, "[%s, %d prompt + %d tokens, first token %.2fs%s]\n", reason.c_str(), f.usage().prompt_tokens(),
               n, t.time_to_first_token_seconds(),
               n > 1 && decode > 0 ? absl::StrFormat(", %.1f tokens/s", (n - 1) / decode).c_str() : "");
}

}  // namespace

int RunChat(const Client& client, const v1::GenerateRequest& base, const ChatOptions& options) {
  auto stub = v1::LlmService::NewStub(client.channel);
  const bool tty = isatty(STDIN_FILENO) != 0;
  v1::ChatInput history;
  auto reset = [&] {
    history.Clear();
    if (!options.system.empty()) {
      v1::ChatMessage* m = history.add_messages();
      m->set_role("system");
      m->set_content(options.system);
    }
  };
  reset();
  if (tty) std::fprintf(stderr, "chat with the served model; /reset forgets, /exit (or Ctrl-D) quits\n");
  std::string line;
  int code = kExitOk;
  while (true) {
    if (tty) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      reset();
      std::fprintf(stderr, "[history cleared]\n");
      continue;
    }
    if (line.empty()) continue;
    v1::ChatMessage* user = history.add_messages();
    user->set_role("user");
    user->set_content(line);
    v1::GenerateRequest request = base;
    *request.mutable_chat() = history;
    if (options.show_prompt) {
      grpc::ClientContext ctx;
      PrepareCall(client, &ctx);
      v1::ApplyChatTemplateRequest areq;
      *areq.mutable_chat() = history;
      v1::ApplyChatTemplateResponse aresp;
      const grpc::Status s = stub->ApplyChatTemplate(&ctx, areq, &aresp);
      if (!s.ok()) return PrintStatus(s);
      std::fprintf(stderr, "[prompt, %d tokens]\n%s\n[end of prompt]\n", aresp.ids_size(), aresp.text().c_str());
    }
    std::string reply;
    v1::Final final;
    if (!StreamReply(client, *stub, request, &reply, &final)) {
      history.mutable_messages()->RemoveLast();  // the turn did not happen
      code = kExitFailure;
      if (!tty) break;
      continue;
    }
    if (final.finish_reason() != v1::FINISH_REASON_UNSPECIFIED && options.stats) PrintStats(final);
    v1::ChatMessage* assistant = history.add_messages();
    assistant->set_role("assistant");
    assistant->set_content(reply);
  }
  return code;
}

}  // namespace llmctl
