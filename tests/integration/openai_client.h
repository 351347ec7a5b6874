// A minimal client of llmserve's OpenAI-compatible HTTP API for the integration tests
// (cpp-httplib): one POST, the body as JSON, a streamed response read as server-sent events.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace llmserve::testing {

struct HttpResult {
  bool sent = false;            // false: no HTTP response (connection failed)
  int status = 0;
  std::map<std::string, std::string> headers;  // the response's, as they arrived (before any body)
  nlohmann::json body;          // non-streaming: the parsed body (null if not JSON)
  std::string raw;              // the body as received
  // Streaming:
  std::vector<nlohmann::json> events;  // every "data:" JSON event, in order
  bool done = false;                   // "data: [DONE]" arrived (last)
  std::string text;                    // choices[0].text / delta.content concatenated
  int logprob_tokens = 0;              // tokens with a logprob entry (ask logprobs to count tokens)
  std::vector<int32_t> token_ids;      // the chunks' token_ids (ask return_token_ids)
  std::string finish_reason;           // from the chunk that carried one
  nlohmann::json usage;                // from the usage chunk (include_usage)
};

// POST `path` on 127.0.0.1:port with `body`; streams when body["stream"] is true. `api_key`
// non-empty adds "Authorization: Bearer <key>".
HttpResult PostJson(int port, const std::string& path, const nlohmann::json& body, const std::string& api_key = "");
// The same with the body's text as given (nlohmann::json would sort object keys).
HttpResult PostRawJson(int port, const std::string& path, const std::string& body_text,
                       const std::string& api_key = "");

// GET `path`: the status, the body (raw) and parsed as JSON (null if not JSON).
HttpResult GetJson(int port, const std::string& path, const std::string& api_key = "");

}  // namespace llmserve::testing
