// llmrun's two paths over a loaded model: the engine (every prompt a request) and the
// direct greedy forward pass (--top-logits). Each prints one JSON line per prompt.
#pragma once

#include "tools/llmrun/llmrun_flags.h"

namespace llmserve::llmrun {

// Loads the model and tokenizer, encodes the prompts and runs them; the process exit
// code (1 with a message on stderr on failure).
int Run(const Args& args);

}  // namespace llmserve::llmrun
