// llmctl's --help texts (the flags themselves are parsed in main.cc).
#pragma once

namespace llmctl {

// `llmctl --help`.
inline constexpr const char* kMainUsage =
    "usage: llmctl [--addr HOST:PORT] COMMAND [FLAGS] [ARGS]\n"
    "\n"
    "Command-line client for the llmserve gRPC API (llmserve.v1.LlmService).\n"
    "\n"
    "commands:\n"
    "  generate    stream a completion for a prompt\n"
    "  chat        an interactive chat (the model's chat template)\n"
    "  tokenize    text -> token ids\n"
    "  detokenize  token ids -> text\n"
    "  info        model and server information\n"
    "  health      grpc.health.v1 health check (exit 0 only when SERVING)\n"
    "\n"
    "flags for every command:\n"
    "  --addr HOST:PORT   server address (default $LLMSERVE_ADDR, else 127.0.0.1:50051)\n"
    "  --timeout SECONDS  deadline for the call (0 = none; default: none for generate,\n"
    "                     5 for health, 30 otherwise)\n"
    "  --json             print responses as JSON lines (proto field names)\n"
    "  --tls              TLS, checking the server's certificate against the system's CAs\n"
    "  --tls-ca FILE      TLS, checking it against this PEM CA bundle instead\n"
    "  --tls-cert FILE, --tls-key FILE  client certificate and key (mutual TLS)\n"
    "  --tls-server-name NAME  the name the server's certificate must carry (default: the host)\n"
    "  --api-key-file FILE     send its key (first line) as 'authorization: Bearer KEY'\n"
    "  -h, --help         help (also: llmctl help COMMAND)\n"
    "\n"
    "Flags take \"--name value\" or \"--name=value\"; \"--\" ends them; TEXT \"-\" reads stdin.\n"
    "exit codes: 0 ok, 1 RPC error (\"llmctl: CODE: message\" on stderr), NOT_SERVING or failed\n"
    "generation, 2 bad usage, 130 cancelled by Ctrl-C.\n";

// `llmctl generate --help`.
inline constexpr const char* kGenerateUsage =
    "usage: llmctl generate [FLAGS] PROMPT\n"
    "\n"
    "Streams the completion's text to stdout as it arrives; then prints the finish reason,\n"
    "usage, timings, seed and request id to stderr. PROMPT \"-\" reads stdin (verbatim,\n"
    "trailing newline included). Ctrl-C cancels the call (exit 130). Unset flags take the\n"
    "server's defaults, in brackets; the server checks the ranges (INVALID_ARGUMENT).\n"
    "\n"
    "sampling:\n"
    "  --temperature T           [1.0] 0 = greedy\n"
    "  --top-k K                 [0 = off]\n"
    "  --top-p P                 [1.0 = off] in (0, 1]\n"
    "  --min-p P                 [0 = off] in [0, 1]\n"
    "  --repetition-penalty R    [1.0 = off] > 0\n"
    "  --presence-penalty X      [0] in [-2, 2]\n"
    "  --frequency-penalty X     [0] in [-2, 2]\n"
    "  --seed S                  [random; the one used is printed]\n"
    "stopping:\n"
    "  --max-tokens N            [256]\n"
    "  --stop S                  stop string (repeatable, up to 16)\n"
    "  --stop-token-id ID        stop token id (repeatable)\n"
    "  --ignore-eos              keep generating past EOS\n"
    "structured output (one of; the output must match it, checked by the server):\n"
    "  --json-schema FILE        a JSON Schema (the file's JSON text)\n"
    "  --json-object             any JSON object\n"
    "  --regex RE                a regular expression the whole output matches\n"
    "  --choice 'a|b|c'          exactly one of these strings ('|' separates them)\n"
    "  --grammar FILE            a GBNF grammar (llama.cpp's syntax, start rule root)\n"
    "  --flexible-whitespace     JSON with any whitespace between tokens [compact]\n"
    "input and output:\n"
    "  --no-bos | --bos          do not / do prepend BOS [the tokenizer's default]\n"
    "  --token-ids               PROMPT is token ids (\"1,2,3\" or several arguments)\n"
    "  --logprobs N              ask for logprobs with N alternatives (0..20); see them\n"
    "                            with --json, the summary shows their sum and mean\n"
    "  --request-id ID           id for the server's logs [the server makes one]\n"
    "  --json                    one JSON line per response message instead of text\n"
    "  --addr HOST:PORT, --timeout SECONDS (default: none)\n"
    "\n"
    "exit codes: 0 when the final message has finish reason EOS, STOP_SEQUENCE, STOP_TOKEN,\n"
    "LENGTH or CONSTRAINT; 1 on a non-OK status or finish reason CANCELLED, DEADLINE or ERROR;\n"
    "2 bad usage; 130 Ctrl-C.\n";

// `llmctl chat --help`.
inline constexpr const char* kChatUsage =
    "usage: llmctl chat [--system TEXT] [--show-prompt] [--no-stats] [sampling flags]\n"
    "\n"
    "An interactive chat: each line read from stdin is a user turn; the conversation so\n"
    "far goes to the server as a chat input, rendered by the model's chat template (or the\n"
    "server's --chat-template), and the reply streams to stdout and joins the history.\n"
    "\"/reset\" forgets the history, \"/exit\" or Ctrl-D quits; Ctrl-C stops a reply, and at\n"
    "the prompt quits. Replies end at the model's end-of-turn token.\n"
    "  --system TEXT       a system message opening the conversation\n"
    "  --show-prompt       print each rendered prompt (ApplyChatTemplate) to stderr\n"
    "  --no-stats          no [finish reason, tokens, speed] line after each reply\n"
    "  sampling, stopping and structured-output flags as for generate (--temperature,\n"
    "  --max-tokens, --seed, --json-schema FILE, ...): every reply is constrained\n"
    "  --addr HOST:PORT, --timeout SECONDS (per reply; default: none)\n";

// `llmctl tokenize --help`.
inline constexpr const char* kTokenizeUsage =
    "usage: llmctl tokenize [--bos | --no-bos] [--pieces] [--json] TEXT\n"
    "\n"
    "Prints the token ids of TEXT (\"-\" reads stdin) on one line, separated by spaces;\n"
    "with --pieces, one line per token: the id, a tab and the quoted text piece.\n"
    "  --bos | --no-bos   prepend BOS or not [the tokenizer's default]\n"
    "  --addr HOST:PORT, --timeout SECONDS (default 30), --json\n";

// `llmctl detokenize --help`.
inline constexpr const char* kDetokenizeUsage =
    "usage: llmctl detokenize [--skip-special] [--json] ID...\n"
    "\n"
    "Prints the text of the token ids and a newline. IDs may be separate arguments or\n"
    "one argument with commas or spaces (\"1,2,3\").\n"
    "  --skip-special     control tokens (BOS, EOS, ...) give no text\n"
    "  --addr HOST:PORT, --timeout SECONDS (default 30), --json\n";

// `llmctl info --help`.
inline constexpr const char* kInfoUsage =
    "usage: llmctl info [--json]\n"
    "\n"
    "Prints the served model (GetModelInfo) and the server's load and capacity\n"
    "(GetServerInfo). --json prints one object {\"model\": {...}, \"server\": {...}}.\n"
    "  --addr HOST:PORT, --timeout SECONDS (default 30)\n";

// `llmctl health --help`.
inline constexpr const char* kHealthUsage =
    "usage: llmctl health [--service NAME] [--json]\n"
    "\n"
    "Calls grpc.health.v1.Health/Check and prints the status (SERVING, NOT_SERVING, ...).\n"
    "Exits 0 only when SERVING (for container health checks), 1 otherwise.\n"
    "  --service NAME     the service to check [\"\" = the whole server];\n"
    "                     e.g. llmserve.v1.LlmService\n"
    "  --addr HOST:PORT, --timeout SECONDS (default 5)\n";

}  // namespace llmctl
