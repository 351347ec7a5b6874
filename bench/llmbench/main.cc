// llmbench: load generator for llmserve over gRPC (like vLLM's serving benchmark), with
// --backend openai for any OpenAI-compatible server over HTTP (llmserve's HTTP API,
// llama.cpp's llama-server, vLLM: streaming /v1/completions), so that all are measured by
// the same code (bench/run_peer_bench.sh).
//
//   llmbench --addr HOST:PORT [--concurrency N | --rate R [--concurrency N]] [--requests N]
//            [--input-len N] [--output-len N] [--len-dist fixed|uniform|exponential]
//            [--prompts-file FILE] [--ignore-eos] [--temperature T] [--top-k K] [--top-p P]
//            [--seed S] [--shared-prefix-len N] [--turns K] [--cache-salt S] [--llamacpp-cache-prompt]
//            [--json FILE] [--jsonl FILE] [--label TEXT] [--allow-failures] ...   (--help lists all)
//
// Closed loop (default): --concurrency streams in flight, the next request starts when one
// ends. Open loop: --rate requests/s with Poisson arrivals (at most --concurrency in flight
// if given). --turns K > 1: --requests conversations of K turns, --concurrency of them in
// flight (closed loop only). Prints a table on stdout; progress on stderr. Exit codes: 0
// all requests OK and consistent, 1 a request failed or mismatched (unless --allow-failures) or the run
// could not start, 2 bad usage. Flags take "--name value" or "--name=value"; dashes and
// underscores are interchangeable.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/llmbench/options.h"
#include "bench/llmbench/report.h"
#include "bench/llmbench/runner.h"
#include "bench/llmbench/workload.h"
#include "grpcpp/grpcpp.h"
#include "llmserve/v1/llmserve.grpc.pb.h"

namespace {

namespace v1 = llmserve::v1;
using llmbench::BenchOptions;

constexpr int kExitProblems = 1;
constexpr int kExitUsage = 2;

// One flag: help text, and a setter for its value ("" for a switch).
struct Flag {
  const char* help;
  bool takes_value;
  std::function<bool(const std::string&)> set;  // false: bad value
};

template <typename T>
Flag Int(const char* help, T* to) {
  return {help, true, [to](const std::string& v) { return absl::SimpleAtoi(v, to); }};
}
Flag Double(const char* help, double* to) {
  return {help, true, [to](const std::string& v) { return absl::SimpleAtod(v, to) && std::isfinite(*to); }};
}
Flag String(const char* help, std::string* to) {
  return {help, true, [to](const std::string& v) {
            *to = v;
            return true;
          }};
}
Flag Switch(const char* help, bool* to) {
  return {help, false, [to](const std::string&) { return *to = true; }};
}

std::map<std::string, Flag> Flags(BenchOptions* o) {
  std::map<std::string, Flag> f;
  f["backend"] = String("grpc (llmserve), openai (any OpenAI-compatible server: HTTP /v1/completions, e.g. "
                        "llmserve --http-port, llama-server or vLLM) (grpc)",
                        &o->backend);
  f["ban-ids"] = {"openai: FIRST-LAST, ids the server may never sample (logit_bias), e.g. 3-258 for the "
                  "byte tokens of a random-weight model, on whose partial UTF-8 llama-server aborts a stream",
                  true, [o](const std::string& v) {
                    const size_t dash = v.find('-');
                    return dash != std::string::npos && absl::SimpleAtoi(v.substr(0, dash), &o->ban_first) &&
                           absl::SimpleAtoi(v.substr(dash + 1), &o->ban_last) && o->ban_first >= 0 &&
                           o->ban_last >= o->ban_first;
                  }};
  f["addr"] = String("server HOST:PORT (127.0.0.1:50051)", &o->addr);
  f["tls"] = Switch("gRPC, openai: TLS, checking the server's certificate against the system's CAs", &o->connect.tls);
  f["tls-ca"] = String("gRPC, openai: TLS, checking the server's certificate against this PEM CA bundle",
                       &o->connect.tls_ca);
  f["tls-cert"] = String("gRPC, openai: PEM client certificate for mutual TLS (with --tls-key)", &o->connect.tls_cert);
  f["tls-key"] = String("gRPC, openai: PEM private key of --tls-cert", &o->connect.tls_key);
  f["tls-server-name"] = String("gRPC: the name the server's certificate must carry (default: the host)",
                                &o->connect.tls_server_name);
  f["api-key-file"] = String("gRPC, openai: send this file's key (first line) as 'authorization: Bearer KEY'",
                             &o->connect.api_key_file);
  f["channels"] = Int("gRPC channels (connections); calls round-robin over them (1)", &o->channels);
  f["requests"] = Int("requests to send; with --turns K > 1 conversations, of K requests each (32)", &o->requests);
  f["warmup-requests"] = Int("requests (conversations) of the same workload sent first, at the same concurrency and "
                             "left out of the report, e.g. so that a shared prefix is in the server's cache (0)",
                             &o->warmup_requests);
  f["concurrency"] = Int("streams in flight: closed loop size, or the open loop's cap (0 = none); with --turns > 1 "
                         "conversations in flight (8)",
                         &o->concurrency);
  f["rate"] = Double("open loop: requests per second, Poisson arrivals; 0 = closed loop (0)", &o->rate);
  f["input-len"] = Int("prompt tokens of a random-token prompt (128)", &o->input_len);
  f["output-len"] = Int("max_tokens per request (128)", &o->output_len);
  f["shared-prefix-len"] = Int("random-token prompts: N random ids (drawn once) open every prompt, before its own "
                               "--input-len ids, for prefix caching (0)",
                               &o->shared_prefix_len);
  f["turns"] = Int("multi-turn chat, closed loop, fixed lengths: each of --requests conversations sends K turns in "
                   "order; turn t+1's prompt = turn t's prompt + the ids it generated + --input-len new ids; "
                   "the report adds per-turn TTFT and cache hit rate (1)",
                   &o->turns);
  f["cache-salt"] = String("gRPC, openai: the cache_salt of every request (requests with different salts share "
                           "no cached prefix) ('')",
                           &o->cache_salt);
  f["llamacpp-cache-prompt"] = Switch("openai: send \"cache_prompt\": true (llama.cpp reuses a slot's "
                                      "cached prompt prefix; other servers ignore it); default false",
                                      &o->llamacpp_cache_prompt);
  f["len-dist"] = {"fixed, uniform ([N(1-r), N(1+r)]) or exponential (mean N, clamped to [1, 10N]) (fixed)", true,
                   [o](const std::string& v) {
                     auto d = llmbench::ParseLengthDist(v);
                     if (d) o->len_dist = *d;
                     return d.has_value();
                   }};
  f["range-ratio"] = Double("r for --len-dist uniform (0.5)", &o->range_ratio);
  f["prompts-file"] = String("text prompts, one JSON string per line, used in turn; default: random token ids",
                             &o->prompts_file);
  f["token-offset"] = Int("random prompt ids are drawn uniformly from [offset, vocab), BOS/EOS skipped (3)",
                          &o->token_offset);
  f["vocab"] = Int("vocabulary size for random ids; 0 = GetModelInfo's (0)", &o->vocab);
  f["ignore-eos"] = Switch("generate past EOS (every request gets its --output-len)", &o->ignore_eos);
  f["json-schema"] = String("constrain every output to the JSON Schema in FILE (openai: llama.cpp's \"json_schema\")",
                            &o->json_schema_file);
  f["regex"] = String("constrain every output to match RE (openai: structured_outputs.regex)", &o->regex);
  f["grammar"] = String("constrain every output to the GBNF grammar in FILE (openai: \"grammar\")",
                        &o->grammar_file);
  f["temperature"] = {"sampling temperature; 0 = greedy (0)", true, [o](const std::string& v) {
                        float x = 0;
                        if (!absl::SimpleAtof(v, &x)) return false;
                        o->temperature = x;
                        return true;
                      }};
  f["top-k"] = {"top-k (server default: off)", true, [o](const std::string& v) {
                  int x = 0;
                  if (!absl::SimpleAtoi(v, &x)) return false;
                  o->top_k = x;
                  return true;
                }};
  f["top-p"] = {"top-p (server default: off)", true, [o](const std::string& v) {
                  float x = 0;
                  if (!absl::SimpleAtof(v, &x)) return false;
                  o->top_p = x;
                  return true;
                }};
  f["seed"] = Int("workload RNG seed; request i samples with seed + i (0)", &o->seed);
  f["timeout"] = Double("per-request deadline in seconds; 0 = none (0)", &o->timeout_seconds);
  f["json"] = String("write the report as JSON to FILE", &o->json_path);
  f["jsonl"] = String("append the report as one JSON line to FILE", &o->jsonl_path);
  f["label"] = String("free text stored as the report's \"label\" (e.g. the run's matrix cell)", &o->label);
  f["allow-failures"] = Switch("exit 0 even when requests failed or mismatched", &o->allow_failures);
  f["progress"] = {"auto (a bar when stderr is a tty, else plain lines), bar, lines or off (auto)", true,
                   [o](const std::string& v) {
                     const std::map<std::string, int> modes = {{"auto", -1}, {"off", 0}, {"lines", 1}, {"bar", 2}};
                     auto it = modes.find(v);
                     if (it != modes.end()) o->progress = it->second;
                     return it != modes.end();
                   }};
  f["progress-interval"] = Double("seconds between plain progress lines (10)", &o->progress_interval);
  return f;
}

void PrintHelp(const std::map<std::string, Flag>& flags) {
  std::cout << "usage: llmbench --addr HOST:PORT [flags]\n"
               "Load generator for llmserve (llmserve.v1.LlmService/Generate); see docs/PERFORMANCE.md.\n"
               "Flags take --name value or --name=value; dashes and underscores are interchangeable.\n"
               "Exit: 0 all OK, 1 failed or mismatched requests (unless --allow-failures), 2 bad usage.\n\n";
  for (const auto& [name, flag] : flags) {
    std::cout << "  --" << name << (flag.takes_value ? " VALUE" : "") << "\n      " << flag.help << "\n";
  }
}

// Parses argv into *o. *help set for -h/--help.
absl::Status ParseArgs(int argc, char** argv, BenchOptions* o, bool* help) {
  std::map<std::string, Flag> flags = Flags(o);
  bool concurrency_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      PrintHelp(flags);
      *help = true;
      return absl::OkStatus();
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg, "' (flags start with --)"));
    }
    std::string name = arg.substr(2), value;
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    for (char& ch : name) ch = ch == '_' ? '-' : ch;
    auto it = flags.find(name);
    if (it == flags.end()) return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name, " (see --help)"));
    if (!it->second.takes_value && eq != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
    }
    if (it->second.takes_value && eq == std::string::npos) {
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      value = argv[++i];
    }
    if (!it->second.set(value)) return absl::InvalidArgumentError(absl::StrCat("--", name, ": bad value '", value, "'"));
    concurrency_given = concurrency_given || name == "concurrency";
  }
  // Closed loop defaults to 8 streams; an open loop is uncapped unless --concurrency says.
  if (!concurrency_given && !o->closed_loop()) o->concurrency = 0;
  return o->Validate();
}

bool WriteFile(const std::string& path, const std::string& text, bool append) {
  std::ofstream out(path, append ? std::ios::app : std::ios::trunc);
  out << text << "\n";
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions o;
  bool help = false;
  if (absl::Status s = ParseArgs(argc, argv, &o, &help); !s.ok()) {
    std::cerr << "llmbench: " << s.message() << "\n";
    return kExitUsage;
  }
  if (help) return 0;
  std::vector<std::string> prompts;
  if (!o.prompts_file.empty()) {
    auto read = llmbench::ReadPromptsFile(o.prompts_file);
    if (!read.ok()) {
      std::cerr << "llmbench: " << read.status().message() << "\n";
      return kExitUsage;
    }
    prompts = std::move(*read);
  }

  absl::StatusOr<llmserve::client::Connection> connection = llmserve::client::Resolve(o.connect);
  if (!connection.ok()) {
    std::cerr << "llmbench: " << connection.status().message() << "\n";
    return kExitUsage;
  }
  std::unique_ptr<llmbench::Backend> backend =
      o.backend == "openai" ? llmbench::MakeOpenAiBackend(o, connection->api_key)
                            : llmbench::MakeGrpcBackend(o, *std::move(connection));
  std::string error;
  const std::optional<v1::ModelInfo> model = backend->ModelInfo(&error);
  llmbench::ModelLimits limits;
  if (model) {
    limits = {model->vocab_size(), model->context_length(), model->bos_id(), model->eos_id()};
  } else {
    // Still send the requests, so that the failures are counted by code.
    if (o.vocab <= 0 || o.backend == "grpc") {
      std::cerr << "llmbench: GetModelInfo failed (" << error << "); random ids drawn from [--token-offset, "
                << (o.vocab > 0 ? o.vocab : 256) << ")\n";
    }
    limits.vocab = 256;
  }
  if (o.vocab > 0) limits.vocab = o.vocab;
  if (absl::Status s = llmbench::CheckContext(o, limits); !s.ok()) {
    std::cerr << "llmbench: " << s.message() << "\n";
    return kExitUsage;
  }
  std::mt19937_64 rng(o.seed);
  // The warm-up is the first --warmup-requests of one workload (so it shares the measured
  // requests' prefix), run to the end before the measured ones start.
  llmbench::BenchOptions all = o;
  all.requests = o.warmup_requests + o.requests;
  auto requests = llmbench::BuildRequests(all, limits, prompts, &rng);
  if (!requests.ok()) {
    std::cerr << "llmbench: " << requests.status().message() << "\n";
    return kExitProblems;
  }
  int warmup_failed = 0;
  if (o.warmup_requests > 0) {
    llmbench::BenchOptions warm = o;
    warm.requests = o.warmup_requests;
    warm.rate = 0;
    warm.progress = 0;
    const auto split = requests->begin() + static_cast<std::ptrdiff_t>(o.warmup_requests) * o.turns;
    std::vector<v1::GenerateRequest> first(requests->begin(), split);
    requests->erase(requests->begin(), split);
    const llmbench::RunResult warmup =
        llmbench::RunRequests(warm, *backend, std::move(first), std::vector<double>(o.warmup_requests, 0.0));
    for (const llmbench::RequestResult& r : warmup.results) warmup_failed += r.code == grpc::StatusCode::OK ? 0 : 1;
    std::cerr << "llmbench: warm-up: " << warmup.results.size() << " requests, " << warmup_failed << " failed\n";
  }
  const std::vector<double> arrivals = llmbench::PoissonArrivals(o.requests, o.rate, &rng);

  llmbench::RunResult run = llmbench::RunRequests(o, *backend, std::move(*requests), arrivals);
  backend.reset();  // joins the HTTP backend's threads
  const nlohmann::json report = llmbench::BuildReport(o, model, &run);
  llmbench::PrintTable(report, stdout);
  std::fflush(stdout);
  int code = 0;
  if (!o.json_path.empty() && !WriteFile(o.json_path, report.dump(2), /*append=*/false)) {
    std::cerr << "llmbench: cannot write " << o.json_path << "\n";
    code = kExitProblems;
  }
  if (!o.jsonl_path.empty() && !WriteFile(o.jsonl_path, report.dump(), /*append=*/true)) {
    std::cerr << "llmbench: cannot write " << o.jsonl_path << "\n";
    code = kExitProblems;
  }
  const int problems = llmbench::ProblemCount(report) + warmup_failed;
  if (problems > 0) {
    std::cerr << "llmbench: " << report["requests"]["failed"].get<int>() + warmup_failed << " failed, "
              << report["requests"]["mismatches"].get<int>() << " mismatched request(s)"
              << (o.allow_failures ? " (allowed)" : "") << "\n";
    if (!o.allow_failures) code = kExitProblems;
  }
  return code;
}
