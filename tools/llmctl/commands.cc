// llmctl subcommands other than generate (generate.cc), and the shared helpers.
#include "tools/llmctl/commands.h"

#include <cinttypes>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "llmserve/v1/llmserve.grpc.pb.h"

namespace llmctl {

namespace v1 = llmserve::v1;
using HealthResponse = grpc::health::v1::HealthCheckResponse;

std::string StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return absl::StrCat("CODE_", static_cast<int>(code));
  }
}

int PrintStatus(const grpc::Status& status) {
  std::fprintf(stderr, "llmctl: %s: %s\n", StatusCodeName(status.error_code()).c_str(),
               status.error_message().c_str());
  return kExitFailure;
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(message, &out, options).ok()) return "{}";
  return out;
}

void PrepareCall(const Client& client, grpc::ClientContext* ctx) {
  if (client.timeout.has_value()) ctx->set_deadline(absl::ToChronoTime(absl::Now() + *client.timeout));
  client.connection.Authorize(ctx);
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += absl::StrFormat("\\x%02x", c);
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

int RunTokenize(const Client& client, const v1::TokenizeRequest& request, bool pieces) {
  grpc::ClientContext ctx;
  PrepareCall(client, &ctx);
  v1::TokenizeResponse response;
  const grpc::Status status = v1::LlmService::NewStub(client.channel)->Tokenize(&ctx, request, &response);
  if (!status.ok()) return PrintStatus(status);
  if (client.json) {
    std::printf("%s\n", ToJson(response).c_str());
  } else if (pieces) {
    for (int i = 0; i < response.ids_size(); ++i) {
      const std::string piece = i < response.pieces_size() ? response.pieces(i) : "";
      std::printf("%d\t%s\n", response.ids(i), Quote(piece).c_str());
    }
  } else {
    std::printf("%s\n", absl::StrJoin(response.ids(), " ").c_str());
  }
  return kExitOk;
}

int RunDetokenize(const Client& client, const v1::DetokenizeRequest& request) {
  grpc::ClientContext ctx;
  PrepareCall(client, &ctx);
  v1::DetokenizeResponse response;
  const grpc::Status status = v1::LlmService::NewStub(client.channel)->Detokenize(&ctx, request, &response);
  if (!status.ok()) return PrintStatus(status);
  if (client.json) {
    std::printf("%s\n", ToJson(response).c_str());
  } else {
    std::printf("%s\n", response.text().c_str());
  }
  return kExitOk;
}

namespace {

// 1234567 -> "1.23M".
std::string HumanCount(int64_t n) {
  if (n >= 1000000000) return absl::StrFormat("%.2fB", n / 1e9);
  if (n >= 1000000) return absl::StrFormat("%.2fM", n / 1e6);
  if (n >= 1000) return absl::StrFormat("%.1fK", n / 1e3);
  return absl::StrCat(n);
}

// 3723.5 -> "1h02m03s".
std::string HumanDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds);
  if (s < 60) return absl::StrFormat("%.1fs", seconds);
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm%02ds", s / 3600, (s / 60) % 60, s % 60);
}

void PrintModelInfo(const v1::ModelInfo& m) {
  std::printf("model\n");
  std::printf("  name:             %s\n", m.name().c_str());
  std::printf("  architecture:     %s\n", m.architecture().c_str());
  std::printf("  parameters:       %s (%" PRId64 ")\n", HumanCount(m.num_parameters()).c_str(), m.num_parameters());
  std::printf("  layers:           %d\n", m.num_layers());
  std::printf("  hidden size:      %d\n", m.hidden_size());
  std::printf("  heads:            %d (%d KV)\n", m.num_heads(), m.num_kv_heads());
  std::printf("  vocab size:       %d\n", m.vocab_size());
  std::printf("  context length:   %d\n", m.context_length());
  std::printf("  weight dtype:     %s\n", m.weight_dtype().c_str());
  std::printf("  kv dtype:         %s\n", m.kv_dtype().c_str());
  std::printf("  bos / eos ids:    %d / %d\n", m.bos_id(), m.eos_id());
  const std::string eos = absl::StrJoin(m.eos_ids(), ", ");
  std::printf("  stops at ids:     %s\n", eos.empty() ? "-" : eos.c_str());
  const v1::SamplingDefaults& d = m.sampling_defaults();
  const std::string from = absl::StrJoin(d.from_model(), ", ");
  std::printf("  sampling:         temperature %g, top_k %d, top_p %g, min_p %g, repetition_penalty %g%s%s%s\n",
              d.temperature(), d.top_k(), d.top_p(), d.min_p(), d.repetition_penalty(), from.empty() ? "" : " (model sets ",
              from.c_str(), from.empty() ? "" : ")");
}

void PrintServerInfo(const v1::ServerInfo& s) {
  const double used_pct = s.kv_blocks_total() > 0 ? 100.0 * s.kv_blocks_used() / s.kv_blocks_total() : 0.0;
  std::printf("server\n");
  std::printf("  version:          %s\n", s.version().c_str());
  std::printf("  uptime:           %s\n", HumanDuration(s.uptime_seconds()).c_str());
  std::printf("  state:            %s\n", s.draining() ? "draining" : "accepting requests");
  std::printf("  requests:         %d running (max %d), %d waiting (max %d)\n", s.running_requests(),
              s.max_running(), s.waiting_requests(), s.max_waiting());
  std::printf("  kv cache:         %d / %d blocks used (%.1f%%), %d tokens per block, %" PRId64 " tokens in all\n",
              s.kv_blocks_used(), s.kv_blocks_total(), used_pct, s.block_size(),
              static_cast<int64_t>(s.kv_blocks_total()) * s.block_size());
  std::printf("  batching:         %d tokens per step, %s steps\n", s.max_batched_tokens(),
              s.step_policy().empty() ? "?" : s.step_policy().c_str());
  std::printf("  preemptions:      %" PRId64 "\n", s.preemptions_total());
}

}  // namespace

int RunInfo(const Client& client) {
  auto stub = v1::LlmService::NewStub(client.channel);
  v1::ModelInfo model;
  v1::ServerInfo server;
  {
    grpc::ClientContext ctx;
    PrepareCall(client, &ctx);
    const grpc::Status status = stub->GetModelInfo(&ctx, v1::GetModelInfoRequest(), &model);
    if (!status.ok()) return PrintStatus(status);
  }
  {
    grpc::ClientContext ctx;
    PrepareCall(client, &ctx);
    const grpc::Status status = stub->GetServerInfo(&ctx, v1::GetServerInfoRequest(), &server);
    if (!status.ok()) return PrintStatus(status);
  }
  if (client.json) {
    std::printf("{\"model\":%s,\"server\":%s}\n", ToJson(model).c_str(), ToJson(server).c_str());
  } else {
    PrintModelInfo(model);
    PrintServerInfo(server);
  }
  return kExitOk;
}

int RunHealth(const Client& client, const std::string& service) {
  grpc::ClientContext ctx;
  PrepareCall(client, &ctx);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  HealthResponse response;
  const grpc::Status status = grpc::health::v1::Health::NewStub(client.channel)->Check(&ctx, request, &response);
  if (!status.ok()) return PrintStatus(status);
  if (client.json) {
    std::printf("%s\n", ToJson(response).c_str());
  } else {
    std::printf("%s\n", HealthResponse::ServingStatus_Name(response.status()).c_str());
  }
  return response.status() == HealthResponse::SERVING ? kExitOk : kExitFailure;
}

}  // namespace llmctl
