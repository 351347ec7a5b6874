#include "server/openai_response.h"

#include <string>
#include <utility>
#include <vector>

#include "model/tokenizer/utf8.h"

namespace llmserve {
namespace {

using json = nlohmann::json;

bool IsChat(const OpenAiResponseContext& ctx) { return ctx.endpoint == OpenAiEndpoint::kChatCompletions; }

// A token's text: its bytes, with bytes that are not valid UTF-8 on their own (a piece of a
// multi-byte character) as U+FFFD.
std::string TokenText(const Tokenizer& tokenizer, int32_t id) {
  std::string out;
  utf8::AppendReplacingInvalid(tokenizer.TokenBytes(id), &out);
  return out;
}

json TokenBytesJson(const Tokenizer& tokenizer, int32_t id) {
  json bytes = json::array();
  for (unsigned char c : tokenizer.TokenBytes(id)) bytes.push_back(static_cast<int>(c));
  return bytes;
}

// Chat's form: {"content": [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}.
json ChatLogprobs(const Tokenizer& tokenizer, const std::vector<TokenLogprobs>& lps) {
  json content = json::array();
  for (const TokenLogprobs& lp : lps) {
    json top = json::array();
    for (const auto& [id, logprob] : lp.top) {
      top.push_back(
          {{"token", TokenText(tokenizer, id)}, {"logprob", logprob}, {"bytes", TokenBytesJson(tokenizer, id)}});
    }
    content.push_back({{"token", TokenText(tokenizer, lp.id)},
                       {"logprob", lp.logprob},
                       {"bytes", TokenBytesJson(tokenizer, lp.id)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

// The legacy completions form: parallel lists, top_logprobs a {token: logprob} object per
// token, text_offset each token's byte offset in the completion (from *offset on).
json CompletionLogprobs(const Tokenizer& tokenizer, const std::vector<TokenLogprobs>& lps, size_t* offset) {
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(),
       text_offset = json::array();
  for (const TokenLogprobs& lp : lps) {
    tokens.push_back(TokenText(tokenizer, lp.id));
    token_logprobs.push_back(lp.logprob);
    json top = json::object();
    for (const auto& [id, logprob] : lp.top) top[TokenText(tokenizer, id)] = logprob;
    top_logprobs.push_back(std::move(top));
    text_offset.push_back(*offset);
    *offset += tokenizer.TokenBytes(lp.id).size();
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top_logprobs)},
          {"text_offset", std::move(text_offset)}};
}

json LogprobsJson(const OpenAiResponseContext& ctx, const std::vector<TokenLogprobs>& lps, size_t* offset) {
  if (!ctx.logprobs || ctx.tokenizer == nullptr) return nullptr;
  return IsChat(ctx) ? ChatLogprobs(*ctx.tokenizer, lps) : CompletionLogprobs(*ctx.tokenizer, lps, offset);
}

// The fields every body starts with.
json Envelope(const OpenAiResponseContext& ctx, bool chunk) {
  const char* object = IsChat(ctx) ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", ctx.id}, {"object", object}, {"created", ctx.created}, {"model", ctx.model}};
}

json StopReason(const GenerationFinal& f) {
  if (f.reason == SequenceState::kFinishedStopString) return f.stop_string;
  return nullptr;
}

}  // namespace

std::string DumpJson(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json FinishReasonJson(SequenceState reason) {
  switch (reason) {
    case SequenceState::kFinishedEos:
    case SequenceState::kFinishedStopToken:
    case SequenceState::kFinishedStopString:
    case SequenceState::kFinishedConstraint:
      return "stop";
    case SequenceState::kFinishedLength:
      return "length";
    default:
      return nullptr;
  }
}

json UsageJson(const GenerationFinal& f) {
  return {{"prompt_tokens", f.prompt_tokens},
          {"completion_tokens", f.completion_tokens},
          {"total_tokens", f.prompt_tokens + f.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", f.cached_tokens}}}};
}

json CompletionBody(const OpenAiResponseContext& ctx, const GenerationDelta& all, const GenerationFinal& f) {
  json body = Envelope(ctx, /*chunk=*/false);
  size_t offset = 0;
  json choice = {{"index", 0}};
  if (IsChat(ctx)) {
    choice["message"] = {{"role", "assistant"}, {"content", all.text}};
  } else {
    choice["text"] = all.text;
  }
  choice["logprobs"] = LogprobsJson(ctx, all.logprobs, &offset);
  if (ctx.token_ids) choice["token_ids"] = all.ids;
  choice["finish_reason"] = FinishReasonJson(f.reason);
  choice["stop_reason"] = StopReason(f);
  body["choices"] = json::array({std::move(choice)});
  body["usage"] = UsageJson(f);
  return body;
}

json ChunkBody(const OpenAiResponseContext& ctx, const GenerationDelta& delta, bool first, size_t* text_offset) {
  json body = Envelope(ctx, /*chunk=*/true);
  json choice = {{"index", 0}};
  if (IsChat(ctx)) {
    json d = {{"content", delta.text}};
    if (first) d["role"] = "assistant";
    choice["delta"] = std::move(d);
  } else {
    choice["text"] = delta.text;
  }
  choice["logprobs"] = LogprobsJson(ctx, delta.logprobs, text_offset);
  if (ctx.token_ids) choice["token_ids"] = delta.ids;
  choice["finish_reason"] = nullptr;
  body["choices"] = json::array({std::move(choice)});
  if (ctx.include_usage) body["usage"] = nullptr;
  return body;
}

json FinishChunkBody(const OpenAiResponseContext& ctx, const GenerationFinal& f) {
  json body = Envelope(ctx, /*chunk=*/true);
  json choice = {{"index", 0}};
  if (IsChat(ctx)) {
    choice["delta"] = json::object();
  } else {
    choice["text"] = "";
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = FinishReasonJson(f.reason);
  choice["stop_reason"] = StopReason(f);
  body["choices"] = json::array({std::move(choice)});
  if (ctx.include_usage) body["usage"] = nullptr;
  return body;
}

json UsageChunkBody(const OpenAiResponseContext& ctx, const GenerationFinal& f) {
  json body = Envelope(ctx, /*chunk=*/true);
  body["choices"] = json::array();
  body["usage"] = UsageJson(f);
  return body;
}

}  // namespace llmserve
