// llmctl: command-line client for the llmserve gRPC API (docs/API.md).
//
//   llmctl [--addr HOST:PORT] COMMAND [FLAGS] [ARGS]
//     generate   [sampling, stopping, constraint flags] PROMPT   stream a completion
//     chat       [--system TEXT] [sampling flags]       interactive chat over stdin
//     tokenize   [--bos|--no-bos] [--pieces] TEXT       text -> token ids
//     detokenize [--skip-special] ID...                 token ids -> text
//     info                                              model and server information
//     health     [--service NAME]                       grpc.health.v1 check
//
// Flags take "--name value" or "--name=value" (dashes and underscores interchangeable),
// may come before or after the arguments, and "--" ends them. PROMPT or TEXT "-" reads
// stdin. Exit codes: 0 ok, 1 RPC error / NOT_SERVING / failed generation, 2 bad usage,
// 130 cancelled by Ctrl-C.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "tools/llmctl/commands.h"
#include "tools/llmctl/usage.h"

namespace {

namespace v1 = llmserve::v1;
using llmctl::kExitUsage;

// One flag: its setter gets the value ("" for a switch).
struct Flag {
  bool takes_value;
  std::function<absl::Status(const std::string& value)> set;
};
using FlagTable = std::map<std::string, Flag>;

absl::Status Bad(const std::string& flag, const std::string& value, const char* what) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": '", value, "' is not ", what));
}

template <typename T>
Flag IntFlag(const std::string& name, std::function<void(T)> set) {
  return {true, [name, set](const std::string& v) {
            T x{};
            if (!absl::SimpleAtoi(v, &x)) return Bad(name, v, "an integer in range");
            set(x);
            return absl::OkStatus();
          }};
}

Flag FloatFlag(const std::string& name, std::function<void(float)> set) {
  return {true, [name, set](const std::string& v) {
            float x = 0;
            if (!absl::SimpleAtof(v, &x)) return Bad(name, v, "a number");
            set(x);
            return absl::OkStatus();
          }};
}

Flag StringFlag(std::function<void(const std::string&)> set) {
  return {true, [set](const std::string& v) {
            set(v);
            return absl::OkStatus();
          }};
}

Flag Switch(std::function<void()> set) {
  return {false, [set](const std::string&) {
            set();
            return absl::OkStatus();
          }};
}

// Options every subcommand accepts.
struct Common {
  std::string addr;
  llmserve::client::ConnectOptions connect;
  std::optional<double> timeout_seconds;
  bool json = false;
  bool help = false;
};

void AddCommonFlags(Common* c, FlagTable* flags) {
  (*flags)["addr"] = StringFlag([c](const std::string& v) { c->addr = v; });
  (*flags)["json"] = Switch([c] { c->json = true; });
  (*flags)["tls"] = Switch([c] { c->connect.tls = true; });
  (*flags)["tls-ca"] = StringFlag([c](const std::string& v) { c->connect.tls_ca = v; });
  (*flags)["tls-cert"] = StringFlag([c](const std::string& v) { c->connect.tls_cert = v; });
  (*flags)["tls-key"] = StringFlag([c](const std::string& v) { c->connect.tls_key = v; });
  (*flags)["tls-server-name"] = StringFlag([c](const std::string& v) { c->connect.tls_server_name = v; });
  (*flags)["api-key-file"] = StringFlag([c](const std::string& v) { c->connect.api_key_file = v; });
  (*flags)["timeout"] = {true, [c](const std::string& v) {
                           double x = 0;
                           if (!absl::SimpleAtod(v, &x) || !std::isfinite(x) || x < 0) {
                             return Bad("timeout", v, "a number of seconds >= 0");
                           }
                           c->timeout_seconds = x;
                           return absl::OkStatus();
                         }};
}

// Parses args[pos...] into flags and positionals. Stops before the first positional when
// `stop_at_positional` (the global part before the command name). *pos ends past the
// consumed args; -h/--help sets common->help.
absl::Status ParseFlags(const std::vector<std::string>& args, size_t* pos, const FlagTable& flags,
                        bool stop_at_positional, Common* common, std::vector<std::string>* positional) {
  bool flags_done = false;
  for (; *pos < args.size(); ++*pos) {
    const std::string& arg = args[*pos];
    const bool is_flag = !flags_done && arg.size() > 1 && arg[0] == '-';
    if (!is_flag) {
      if (stop_at_positional) return absl::OkStatus();
      positional->push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      common->help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) return absl::InvalidArgumentError(absl::StrCat("unknown flag '", arg, "'"));
    std::string name = arg.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    for (char& ch : name) ch = ch == '_' ? '-' : ch;
    const auto it = flags.find(name);
    if (it == flags.end()) return absl::InvalidArgumentError(absl::StrCat("unknown flag '--", name, "'"));
    if (!it->second.takes_value && inline_value) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
    }
    if (it->second.takes_value && !inline_value) {
      if (*pos + 1 >= args.size()) return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      value = args[++*pos];
    }
    if (absl::Status st = it->second.set(value); !st.ok()) return st;
  }
  return absl::OkStatus();
}

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF).
bool IsValidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (int k = 1; k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

// The single TEXT/PROMPT argument ("-" = all of stdin), checked to be UTF-8.
absl::Status TextArg(const std::vector<std::string>& positional, const char* what, std::string* out) {
  if (positional.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("expected one ", what, " argument (quote it), got ",
                                                   positional.size()));
  }
  if (positional[0] == "-") {
    *out = std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    *out = positional[0];
  }
  if (!IsValidUtf8(*out)) return absl::InvalidArgumentError(absl::StrCat(what, " is not valid UTF-8"));
  return absl::OkStatus();
}

// Token ids from arguments, each holding one or more ids separated by commas or spaces.
absl::Status IdArgs(const std::vector<std::string>& positional, google::protobuf::RepeatedField<int32_t>* ids) {
  for (const std::string& arg : positional) {
    for (absl::string_view part : absl::StrSplit(arg, absl::ByAnyChar(", \t\n"), absl::SkipEmpty())) {
      int32_t id = 0;
      if (!absl::SimpleAtoi(part, &id)) {
        return absl::InvalidArgumentError(absl::StrCat("'", std::string(part), "' is not a token id"));
      }
      ids->Add(id);
    }
  }
  if (ids->empty()) return absl::InvalidArgumentError("expected at least one token id");
  return absl::OkStatus();
}

// The whole file at `path` (for --json-schema and --grammar), checked to be UTF-8.
absl::Status ReadTextFile(const std::string& flag, const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": cannot read '", path, "'"));
  *out = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": cannot read '", path, "'"));
  if (!IsValidUtf8(*out)) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": '", path, "' is not UTF-8"));
  return absl::OkStatus();
}

// The output-constraint flags (generate and chat) into request->constraint.
void AddConstraintFlags(v1::GenerateRequest* request, std::vector<std::string>* kinds, FlagTable* flags) {
  v1::OutputConstraint* c = request->mutable_constraint();
  (*flags)["json-schema"] = {true, [c, kinds](const std::string& v) {
                               kinds->push_back("--json-schema");
                               return ReadTextFile("json-schema", v, c->mutable_json_schema());
                             }};
  (*flags)["grammar"] = {true, [c, kinds](const std::string& v) {
                           kinds->push_back("--grammar");
                           return ReadTextFile("grammar", v, c->mutable_grammar());
                         }};
  (*flags)["regex"] = StringFlag([c, kinds](const std::string& v) {
    kinds->push_back("--regex");
    c->set_regex(v);
  });
  (*flags)["choice"] = StringFlag([c, kinds](const std::string& v) {
    kinds->push_back("--choice");
    v1::ChoiceList* list = c->mutable_choice();
    list->clear_choices();
    for (absl::string_view one : absl::StrSplit(v, '|')) list->add_choices(std::string(one));
  });
  (*flags)["json-object"] = Switch([c, kinds] {
    kinds->push_back("--json-object");
    c->mutable_json_object();
  });
  (*flags)["flexible-whitespace"] = Switch([c] { c->set_flexible_whitespace(true); });
}

// After parsing: at most one constraint flag; --flexible-whitespace only with one.
absl::Status CheckConstraintFlags(const std::vector<std::string>& kinds, v1::GenerateRequest* request) {
  if (kinds.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(kinds[0], " and ", kinds[1], " both constrain the output: give one"));
  }
  if (kinds.empty()) {
    if (request->constraint().flexible_whitespace()) {
      return absl::InvalidArgumentError("--flexible-whitespace needs --json-schema or --json-object");
    }
    request->clear_constraint();
  }
  return absl::OkStatus();
}

// Subcommand: its flags, how to check the arguments, and how to run.
struct Command {
  const char* usage;
  FlagTable flags;
  std::function<absl::Status(const std::vector<std::string>&)> check_args;
  std::function<int(const llmctl::Client&)> run;
  double default_timeout;  // seconds; 0 = no deadline
};

// "llmctl: <what is wrong>" and where to find help; returns kExitUsage.
int UsageError(const absl::Status& st, const std::string& command) {
  std::fprintf(stderr, "llmctl: %s\nrun 'llmctl %s--help' for usage\n", std::string(st.message()).c_str(),
               command.empty() ? "" : (command + " ").c_str());
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  llmctl::InterruptWatcher interrupts;  // first: blocks the signals before any thread starts

  std::vector<std::string> args(argv + 1, argv + argc);
  Common common;
  const char* env_addr = std::getenv("LLMSERVE_ADDR");
  common.addr = env_addr != nullptr && *env_addr != '\0' ? env_addr : "127.0.0.1:50051";

  FlagTable global;
  AddCommonFlags(&common, &global);
  size_t pos = 0;
  if (absl::Status st = ParseFlags(args, &pos, global, true, &common, nullptr); !st.ok()) {
    return UsageError(st, "");
  }
  if (pos >= args.size() || args[pos] == "help") {
    const bool asked = common.help || (pos < args.size() && args[pos] == "help");
    if (asked && pos + 1 < args.size()) {
      // "llmctl help COMMAND": fall through to COMMAND --help.
      args = {args[pos + 1], "--help"};
      pos = 0;
    } else {
      std::fputs(llmctl::kMainUsage, asked ? stdout : stderr);
      return asked ? llmctl::kExitOk : kExitUsage;
    }
  }
  const std::string name = args[pos++];

  v1::GenerateRequest gen;
  v1::TokenizeRequest tok;
  v1::DetokenizeRequest detok;
  bool pieces = false, token_ids = false;
  std::vector<std::string> constraint_flags;  // the constraint flags given, in order
  std::string service;
  std::map<std::string, Command> commands;

  // The sampling and stopping flags (generate and chat).
  auto add_sampling_flags = [&](FlagTable& g) {
  g["max-tokens"] = IntFlag<int32_t>("max-tokens", [&](int32_t x) { gen.set_max_tokens(x); });
  g["temperature"] = FloatFlag("temperature", [&](float x) { gen.set_temperature(x); });
  g["top-k"] = IntFlag<int32_t>("top-k", [&](int32_t x) { gen.set_top_k(x); });
  g["top-p"] = FloatFlag("top-p", [&](float x) { gen.set_top_p(x); });
  g["min-p"] = FloatFlag("min-p", [&](float x) { gen.set_min_p(x); });
  g["repetition-penalty"] = FloatFlag("repetition-penalty", [&](float x) { gen.set_repetition_penalty(x); });
  g["presence-penalty"] = FloatFlag("presence-penalty", [&](float x) { gen.set_presence_penalty(x); });
  g["frequency-penalty"] = FloatFlag("frequency-penalty", [&](float x) { gen.set_frequency_penalty(x); });
  g["seed"] = IntFlag<uint64_t>("seed", [&](uint64_t x) { gen.set_seed(x); });
  g["stop"] = StringFlag([&](const std::string& v) { gen.add_stop(v); });
  g["stop-token-id"] = IntFlag<int32_t>("stop-token-id", [&](int32_t x) { gen.add_stop_token_ids(x); });
  g["ignore-eos"] = Switch([&] { gen.set_ignore_eos(true); });
  g["request-id"] = StringFlag([&](const std::string& v) { gen.set_request_id(v); });
  AddConstraintFlags(&gen, &constraint_flags, &g);
  };

  Command& generate = commands["generate"];
  generate.usage = llmctl::kGenerateUsage;
  generate.default_timeout = 0;
  FlagTable& g = generate.flags;
  add_sampling_flags(g);
  g["logprobs"] = IntFlag<int32_t>("logprobs", [&](int32_t x) { gen.set_logprobs(x); });
  g["bos"] = Switch([&] { gen.set_add_bos(true); });
  g["no-bos"] = Switch([&] { gen.set_add_bos(false); });
  g["token-ids"] = Switch([&] { token_ids = true; });
  generate.check_args = [&](const std::vector<std::string>& pos_args) {
    if (absl::Status st = CheckConstraintFlags(constraint_flags, &gen); !st.ok()) return st;
    if (token_ids) return IdArgs(pos_args, gen.mutable_tokens()->mutable_ids());
    return TextArg(pos_args, "PROMPT", gen.mutable_text());
  };
  generate.run = [&](const llmctl::Client& c) { return llmctl::RunGenerate(c, gen); };

  llmctl::ChatOptions chat_options;
  Command& chat = commands["chat"];
  chat.usage = llmctl::kChatUsage;
  chat.default_timeout = 0;
  add_sampling_flags(chat.flags);
  chat.flags["system"] = StringFlag([&](const std::string& v) { chat_options.system = v; });
  chat.flags["show-prompt"] = Switch([&] { chat_options.show_prompt = true; });
  chat.flags["no-stats"] = Switch([&] { chat_options.stats = false; });
  chat.check_args = [&](const std::vector<std::string>& a) {
    if (absl::Status st = CheckConstraintFlags(constraint_flags, &gen); !st.ok()) return st;
    return a.empty() ? absl::OkStatus() : absl::InvalidArgumentError("chat takes no arguments (it reads stdin)");
  };
  chat.run = [&](const llmctl::Client& c) { return llmctl::RunChat(c, gen, chat_options); };

  Command& tokenize = commands["tokenize"];
  tokenize.usage = llmctl::kTokenizeUsage;
  tokenize.default_timeout = 30;
  tokenize.flags["bos"] = Switch([&] { tok.set_add_bos(true); });
  tokenize.flags["no-bos"] = Switch([&] { tok.set_add_bos(false); });
  tokenize.flags["pieces"] = Switch([&] { pieces = true; });
  tokenize.check_args = [&](const std::vector<std::string>& a) { return TextArg(a, "TEXT", tok.mutable_text()); };
  tokenize.run = [&](const llmctl::Client& c) { return llmctl::RunTokenize(c, tok, pieces); };

  Command& detokenize = commands["detokenize"];
  detokenize.usage = llmctl::kDetokenizeUsage;
  detokenize.default_timeout = 30;
  detokenize.flags["skip-special"] = Switch([&] { detok.set_skip_special(true); });
  detokenize.check_args = [&](const std::vector<std::string>& a) { return IdArgs(a, detok.mutable_ids()); };
  detokenize.run = [&](const llmctl::Client& c) { return llmctl::RunDetokenize(c, detok); };

  Command& info = commands["info"];
  info.usage = llmctl::kInfoUsage;
  info.default_timeout = 30;
  info.check_args = [](const std::vector<std::string>& a) {
    return a.empty() ? absl::OkStatus() : absl::InvalidArgumentError("info takes no arguments");
  };
  info.run = [](const llmctl::Client& c) { return llmctl::RunInfo(c); };

  Command& health = commands["health"];
  health.usage = llmctl::kHealthUsage;
  health.default_timeout = 5;
  health.flags["service"] = StringFlag([&](const std::string& v) { service = v; });
  health.check_args = [](const std::vector<std::string>& a) {
    return a.empty() ? absl::OkStatus() : absl::InvalidArgumentError("health takes no arguments");
  };
  health.run = [&](const llmctl::Client& c) { return llmctl::RunHealth(c, service); };

  const auto it = commands.find(name);
  if (it == commands.end()) {
    return UsageError(absl::InvalidArgumentError(absl::StrCat("unknown command '", name, "'")), "");
  }
  Command& cmd = it->second;
  AddCommonFlags(&common, &cmd.flags);
  std::vector<std::string> positional;
  if (absl::Status st = ParseFlags(args, &pos, cmd.flags, false, &common, &positional); !st.ok()) {
    return UsageError(st, name);
  }
  if (common.help) {
    std::fputs(cmd.usage, stdout);
    return llmctl::kExitOk;
  }
  if (absl::Status st = cmd.check_args(positional); !st.ok()) return UsageError(st, name);

  absl::StatusOr<llmserve::client::Connection> connection = llmserve::client::Resolve(common.connect);
  if (!connection.ok()) {
    if (absl::IsInvalidArgument(connection.status())) return UsageError(connection.status(), name);
    std::fprintf(stderr, "llmctl: %s\n", std::string(connection.status().message()).c_str());
    return llmctl::kExitFailure;
  }
  llmctl::Client client;
  client.connection = *std::move(connection);
  client.channel = client.connection.NewChannel(common.addr);
  client.json = common.json;
  client.interrupts = &interrupts;
  const double timeout = common.timeout_seconds.value_or(cmd.default_timeout);
  if (timeout > 0) client.timeout = absl::Seconds(timeout);
  return cmd.run(client);
}
