// llmrun's command line: the engine's flags (server/engine_flags.h, shared with llmserve,
// so the same flags give the same engine) plus llmrun's own (prompts, generation,
// sampling, stopping, --top-logits), parsed by absl.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/sampling_params.h"
#include "server/engine_flags.h"
#include "server/engine_spec.h"

namespace llmserve::llmrun {

struct Args {
  EngineSpec spec;                    // the engine flags, validated
  std::vector<std::string> prompts;   // --prompt, repeatable, in order
  std::string prompts_file;           // one JSON string per line
  int64_t max_tokens = 256;           // generated tokens per prompt at most
  int32_t concurrency = 1;            // prompts in flight at a time
  bool batch = false;                 // every prompt at once
  int32_t top_logits = 0;             // > 0: the direct path (see main.cc)
  SamplingParams sampling;            // greedy unless --temperature > 0
  bool sampling_flags = false;        // any sampling or stop flag given (refused with --top-logits)
  std::vector<std::string> stop_strings;  // --stop, repeatable
  std::vector<int32_t> stop_ids;          // --stop-token-id, repeatable
  bool ignore_eos = false;
};

// ParseCommandLineOrExit's options for llmrun: its usage text, --help's files, the
// repeatable flags, and --prefill-chunk as the old name of --max-prefill-chunk.
CommandLineOptions CommandLineOptionsForLlmrun();

// The parsed flags (and `command_line`'s repeated ones) as validated Args;
// INVALID_ARGUMENT naming the flag.
absl::StatusOr<Args> ArgsFromFlags(const CommandLine& command_line);

}  // namespace llmserve::llmrun
