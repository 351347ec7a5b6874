// Limits and per-render options of the chat-template engine. Templates are untrusted
// input: every cap below turns into a clean error, never a crash, hang or OOM.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace llmserve::chat {

// Resource caps for parsing and rendering one template.
struct TemplateLimits {
  size_t max_source_bytes = 1 << 20;       // template source size
  int max_nesting_depth = 100;             // parser: nested blocks, expression height
  size_t max_output_bytes = 8 << 20;       // bytes of rendered output (also each macro's)
  uint64_t max_steps = 20'000'000;         // evaluation steps per render (statements, nodes, items)
  int max_call_depth = 64;                 // macro recursion
  int max_eval_depth = 600;                // evaluator recursion (expressions + statements + calls)
  size_t max_collection_size = 1 << 20;    // elements of one list/dict/range, input included
  size_t max_string_bytes = 4 << 20;       // bytes of one string built by the template
  size_t max_alloc_bytes = 256u << 20;     // cumulative bytes of strings/lists built per render
  int max_value_depth = 128;               // nesting of lists/dicts, input JSON included

  // OK if every cap is positive and the depths are sane.
  absl::Status Validate() const;
};

// Per-render inputs that are not template variables.
struct RenderOptions {
  // What strftime_now() formats (as UTC broken-down time; pass local time if wanted).
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
};

}  // namespace llmserve::chat
