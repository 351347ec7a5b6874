// The engine's command-line flags, shared by llmserve, llmrun and engine_bench (one
// ABSL_FLAG each, defaults from EngineSpec{}), and the command-line parsing all three use.
//
//   --model --tokenizer --threads --weight-dtype --kv-dtype --kv-cache-bytes --kv-blocks
//   --block-size --max-running --max-batched-tokens --max-prefill-chunk --max-waiting
//   --step-policy --max-decode-stall --piggyback --prefill-spread-steps
//   --mixed-step-tokens --channel-capacity
//
// ParseCommandLineOrExit runs absl's parser (absl::ParseCommandLine's, with absl's --help,
// --helpfull, --version) after two conveniences: dashes in a flag's name are underscores
// ("--max-running 8" is --max_running=8), and a binary's repeatable flags (llmrun's
// --prompt) are collected in order first. A bad flag or value prints absl's message on
// stderr and exits with kBadFlagsExitCode; a usage flag prints to stdout and exits 0.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine_spec.h"

namespace llmserve {

// The exit code of a bad command line (unknown flag, bad value, positional argument, or
// a value its config's Validate() refuses).
inline constexpr int kBadFlagsExitCode = 2;

struct CommandLineOptions {
  std::string usage;                     // the first lines of --help (after "<program>: ")
  std::string version;                   // what --version prints (a line)
  std::vector<std::string> help_files;   // the flag files --help lists, as "dir/file.cc"
                                         // (server/engine_flags.cc is always one)
  std::map<std::string, std::string> aliases;  // old flag name -> current one (underscored)
  std::vector<std::string> repeated;     // flags that may repeat, collected in order, each
                                         // "--name value" or "--name=value" (underscored)
};

struct CommandLine {
  std::map<std::string, std::vector<std::string>> repeated;  // name -> values, in order
};

// Parses argv into the absl flags (see above); exits on a bad command line or a usage
// flag. Positional arguments are an error.
CommandLine ParseCommandLineOrExit(int argc, char** argv, const CommandLineOptions& options);

// The engine flags as a validated spec (INVALID_ARGUMENT naming the flag).
absl::StatusOr<EngineSpec> EngineSpecFromFlags();

}  // namespace llmserve
