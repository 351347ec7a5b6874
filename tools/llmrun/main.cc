// llmrun: offline generation (no server) through the continuous-batching engine.
//
//   llmrun --model PATH [--tokenizer PATH] (--prompt TEXT ... | --prompts-file FILE)
//          [--max-tokens N] [--concurrency N | --batch]
//          [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repetition-penalty R]
//          [--presence-penalty X] [--frequency-penalty X] [--seed S] [--logprobs N]
//          [--stop TEXT ...] [--stop-token-id ID ...] [--ignore-eos]
//          [engine flags: llmserve's, server/engine_flags.h] [--top-logits K]
//
// PATH is a llama2.c .bin (its tokenizer then given by --tokenizer), a .gguf, or a
// HuggingFace directory. A prompts file holds one JSON string per line. Prompts are
// submitted to the engine --concurrency at a time (--batch: all at once); generation is
// greedy unless --temperature > 0. Prints one JSON line per prompt, in input order:
//   {"prompt_ids": [...], "generated_ids": [...], "text": "...", "finish_reason": "...",
//    "stop_string": "...", "seed": S, "preemptions": N, "logprobs": [[id, lp, [[id, lp]...]]...]}
// text is the streamed continuation (stop strings cut). Generation stops at --max-tokens,
// EOS (not kept), a stop id or string; for llama2.c models BOS (id 1) also ends a story,
// as in run.c. A summary (tokens/s, steps, preemptions) goes to stderr.
//
// --top-logits K instead runs greedy generation directly on the forward pass (no engine,
// no sampling flags) and adds the K largest logits at the last prompt position
// ("top_logits": [[id, logit], ...]); the reference tests use it. --batch and
// --max-prefill-chunk (old name: --prefill-chunk) apply there too.
//
// The engine is the server's for the same engine flags (--kv-cache-bytes, --max-running,
// --piggyback, ..., with llmserve's defaults; one BuildEngine), except that --max-waiting
// is raised to the number of prompts. Flags are absl's (--help lists them); they take
// "--name value" or "--name=value", dashes and underscores interchangeable; --prompt,
// --stop and --stop-token-id may repeat. A bad flag or value: exit code 2.
#include <iostream>

#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"
#include "tools/llmrun/llmrun_flags.h"
#include "tools/llmrun/run.h"

int main(int argc, char** argv) {
  const llmserve::CommandLine command_line =
      llmserve::ParseCommandLineOrExit(argc, argv, llmserve::llmrun::CommandLineOptionsForLlmrun());
  auto args = llmserve::llmrun::ArgsFromFlags(command_line);
  if (!args.ok()) {
    std::cerr << "llmrun: " << args.status().message() << " (see --help)\n";
    return llmserve::kBadFlagsExitCode;
  }
  // stdout carries the JSON lines; the engine's per-request log lines go to stderr.
  spdlog::set_default_logger(spdlog::stderr_logger_mt("llmrun"));
  return llmserve::llmrun::Run(*args);
}
