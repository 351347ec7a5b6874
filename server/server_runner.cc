#include "server/server_runner.h"

#include <algorithm>
#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpc/grpc.h"
#include "grpcpp/grpcpp.h"
#include "grpc/health/v1/health.pb.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "model/dtype.h"
#include "prometheus/registry.h"
#include "server/access_gate.h"
#include "server/api_keys.h"
#include "server/grpc_listener.h"
#include "server/llm_service.h"
#include "server/metrics.h"
#include "server/metrics_exposer.h"
#include "server/model_setup.h"
#include "server/openai_server.h"
#include "server/openai_service.h"
#include "server/reflection_guard.h"
#include "server/service_gate.h"
#include "server/tls_credentials.h"
#include "spdlog/spdlog.h"

namespace llmserve {
namespace {

// After a drain that timed out: how long the streams still open get to write their
// (cancelled) finals before the server cancels them.
constexpr absl::Duration kShutdownGrace = absl::Seconds(5);
// After the port closed: how long connections accepted just before still get to start
// their calls before GOAWAY (a proxy sends its call right after connecting).
constexpr absl::Duration kAcceptLinger = absl::Milliseconds(500);

// Drops gRPC's reflection plugin from a ServerBuilder. The plugin registers itself with
// every builder of a process that links grpc++_reflection (a static initializer), so
// --reflection=off has to take it out of the builder.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    std::erase_if(*plugins, [](const auto& p) { return p->name() == "proto_server_reflection"; });
  }
};

// The gRPC server, without ports of its own: `listener` hands it the connections, with
// `credentials`. `access` checks reflection calls (ReflectionGuardFactory) where they need a key.
std::unique_ptr<grpc::Server> StartGrpc(const ServerConfig& config, ServiceGate* gate,
                                        std::shared_ptr<const AccessGate> access, GrpcListener& listener,
                                        std::shared_ptr<grpc::ServerCredentials> credentials) {
  grpc::EnableDefaultHealthCheckService(true);
  // Link grpc.health.v1's descriptors in, so reflection can describe the health service
  // (gRPC's built-in health service does not use the generated messages).
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::ServerBuilder builder;
  builder.RegisterService(gate);
  listener.Attach(builder, std::move(credentials));
  if (config.reflection == ReflectionMode::kOff) builder.SetOption(std::make_unique<WithoutReflection>());
  // Only then are interceptors installed (ReflectionGuard's would pass every call anyway).
  if (config.reflection == ReflectionMode::kOn && access->keys_enabled()) {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
    interceptors.push_back(std::make_unique<ReflectionGuardFactory>(std::move(access)));
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  // A larger request is refused by gRPC (RESOURCE_EXHAUSTED) before anything parses it.
  builder.SetMaxReceiveMessageSize(static_cast<int>(config.max_request_bytes));
  // A connection opens at most this many calls at once; the client queues the rest.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, config.max_streams_per_connection);
  // Ping idle connections every minute (a vanished client's streams get cancelled) and
  // accept client keepalive pings down to every 10 s, also between calls.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  return builder.BuildAndStart();
}

void SetHealth(grpc::Server& server, bool serving) {
  grpc::HealthCheckServiceInterface* health = server.GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus("", serving);
  health->SetServingStatus(llmserve::v1::LlmService::service_full_name(), serving);
}

// Generate streams and HTTP completions open.
int64_t OpenStreams(const LlmService& service, const OpenAiServer* http) {
  return service.open_streams() + (http != nullptr ? http->open_requests() : 0);
}

// Polls until no Generate stream or HTTP completion is open or `deadline`; true if none is.
bool WaitStreamsClosed(const LlmService& service, const OpenAiServer* http, absl::Time deadline) {
  while (OpenStreams(service, http) > 0) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

// Steps 1-5 of the shutdown (server_runner.h).
void Drain(const ServerConfig& config, AccessGate& access, GrpcListener& listener, grpc::Server& server,
           Engine& engine, const LlmService& service, OpenAiServer* http) {
  // 1. Tell the health checkers first; during the delay everything is still served.
  access.SetPhase(ServingPhase::kDraining);
  if (grpc::HealthCheckServiceInterface* health = server.GetHealthCheckService()) health->SetServingStatus(false);
  if (config.drain_delay_seconds > 0) {
    spdlog::info("serving on for --drain-delay={} s (health NOT_SERVING)", config.drain_delay_seconds);
    absl::SleepFor(absl::Seconds(config.drain_delay_seconds));
  }
  // 2. Refuse at the transport, never with a gRPC status (it arrives as HTTP 200 with a
  // grpc-status trailer, which no proxy retries). First the port closes: a new connection
  // is refused by the kernel (a proxy retries the call on another replica) while the
  // connections already accepted are still served, so that a call racing the close on a
  // fresh connection is not lost. After kAcceptLinger, Shutdown sends GOAWAY to the
  // clients that keep their connections open (they reconnect: refused, UNAVAILABLE).
  // Calls in flight run on; past the drain timeout (and its grace) Shutdown cancels them.
  // The HTTP port likewise: closed at once, then requests on its open keep-alive
  // connections get 503 and the connection closes.
  listener.Close();
  if (http != nullptr) http->Close();
  spdlog::info("port closed: refusing new connections");
  absl::SleepFor(kAcceptLinger);
  access.SetPhase(ServingPhase::kRefusing);
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + absl::Seconds(config.drain_timeout_seconds);
  // The core shutdown begins here, on this thread, so that it surely precedes step 5's
  // cancel; grpc::Server::Shutdown then joins it (the core accepts repeated requests).
  grpc_completion_queue* core_cq = grpc_completion_queue_create_for_pluck(nullptr);
  int core_tag = 0;
  grpc_server_shutdown_and_notify(server.c_server(), core_cq, &core_tag);
  std::thread shutdown([&server, hard = deadline + kShutdownGrace] { server.Shutdown(absl::ToChronoTime(hard)); });
  spdlog::info("refusing new calls (GOAWAY); waiting up to {} s for the streams in flight",
               config.drain_timeout_seconds);
  // 3. Streams close just after their engine request ends (the final still has to be written).
  const bool drained = engine.WaitIdle(deadline - start) && WaitStreamsClosed(service, http, deadline);
  if (drained) {
    spdlog::info("drained in {:.3f} s", absl::ToDoubleSeconds(absl::Now() - start));
  } else {
    // 4. Past the timeout.
    const EngineStats stats = engine.Stats();
    spdlog::warn("drain timeout ({} s): cancelling {} running and {} waiting requests, {} streams open",
                 config.drain_timeout_seconds, stats.running, stats.waiting, OpenStreams(service, http));
    engine.Stop();  // every request left gets its final (cancelled) ...
    if (!WaitStreamsClosed(service, http, absl::Now() + kShutdownGrace)) {  // ... which is written here
      spdlog::warn("{} streams still open after {}: cancelling them", OpenStreams(service, http),
                   absl::FormatDuration(kShutdownGrace));
    }
  }
  // 5. Nothing useful is left in flight: drop the connections still open (idle clients
  // may keep theirs for seconds after GOAWAY) and cancel what remains, so Shutdown
  // returns now rather than at its deadline.
  grpc_server_cancel_all_calls(server.c_server());
  shutdown.join();
  grpc_completion_queue_pluck(core_cq, &core_tag, gpr_inf_future(GPR_CLOCK_REALTIME), nullptr);
  grpc_completion_queue_shutdown(core_cq);
  grpc_completion_queue_destroy(core_cq);
  server.Wait();
  engine.Stop();
}

// The engine_config_info labels for `config`.
MetricsConfigInfo ConfigInfo(const ServerConfig& config) {
  MetricsConfigInfo info;
  info.block_size = config.block_size;
  const absl::string_view kd = DTypeName(config.EffectiveKvDType());
  info.weight_dtype = WeightDTypeFlagValue(config);
  info.kv_dtype = std::string(kd.data(), kd.size());
  info.threads = config.threads;
  info.max_running = config.max_running;
  info.max_batched_tokens = config.max_batched_tokens;
  info.step_policy = StepPolicyName(config.step_policy);
  info.version = kLlmserveVersion;
  return info;
}

// The keys of --api-key-file, or none without it.
absl::StatusOr<std::optional<ApiKeys>> LoadApiKeys(const ServerConfig& config) {
  if (config.api_key_file.empty()) return std::optional<ApiKeys>();
  absl::StatusOr<ApiKeys> keys = ApiKeys::Load(config.api_key_file);
  if (!keys.ok()) return keys.status();
  return std::optional<ApiKeys>(*std::move(keys));
}

// SIGHUP: re-read --api-key-file (a bad file keeps the keys in use). Certificates need no
// signal: their files are watched.
void OnHangup(const ServerConfig& config, AccessGate& access) {
  if (config.api_key_file.empty()) {
    spdlog::info("SIGHUP: no --api-key-file to re-read{}", config.tls.enabled() ? "; TLS files are re-read every "
                 + std::to_string(config.tls.reload_seconds) + " s" : "");
    return;
  }
  absl::StatusOr<ApiKeys> keys = ApiKeys::Load(config.api_key_file);
  if (!keys.ok()) {
    spdlog::error("SIGHUP: keeping the API keys in use: {}", std::string(keys.status().message()));
    return;
  }
  spdlog::info("SIGHUP: {} API keys from {}", keys->size(), config.api_key_file);
  access.ReplaceApiKeys(*std::move(keys));
}

// "TLS ...; N API keys (...)" for the start-up line: what needs a key and what does not.
std::string SecuritySummary(const ServerConfig& config, const std::optional<ApiKeys>& keys) {
  if (!keys.has_value()) return absl::StrCat(config.tls.Describe(), "; no API keys");
  const char* needs = "";
  switch (config.reflection) {
    case ReflectionMode::kOn: needs = "llmserve.v1 and reflection need one, health none"; break;
    case ReflectionMode::kOpen: needs = "llmserve.v1 needs one, health and reflection (--reflection=open) none"; break;
    case ReflectionMode::kOff: needs = "llmserve.v1 needs one, health none"; break;
  }
  return absl::StrCat(config.tls.Describe(), "; ", keys->size(), " API keys (", needs, ")");
}

}  // namespace

int RunServer(const ServerConfig& config, SignalWatcher& signals) {
  absl::StatusOr<std::optional<ApiKeys>> keys = LoadApiKeys(config);
  if (!keys.ok()) {
    spdlog::error("{}", std::string(keys.status().message()));
    return 1;
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = MakeServerCredentials(config.tls);
  if (!credentials.ok()) {
    spdlog::error("{}", std::string(credentials.status().message()));
    return 1;
  }
  const std::string security = SecuritySummary(config, *keys);
  const bool has_keys = keys->has_value();
  // Metrics first (known before the model loads), scrapeable while it loads.
  auto registry = std::make_shared<prometheus::Registry>();
  absl::StatusOr<std::unique_ptr<Metrics>> metrics =
      Metrics::Create(*registry, config.metrics_prefix, ServedModelName(config), ConfigInfo(config));
  if (!metrics.ok()) {
    spdlog::error("{}", std::string(metrics.status().message()));
    return 1;
  }
  std::unique_ptr<MetricsExposer> exposer;
  if (config.metrics_port != 0) {
    absl::StatusOr<std::unique_ptr<MetricsExposer>> started =
        MetricsExposer::Start(config.metrics_host.empty() ? config.host : config.metrics_host, config.metrics_port,
                              registry, config.metrics_tls ? &config.tls : nullptr, config.HttpOptions("metrics"));
    if (!started.ok()) {
      spdlog::error("{}", std::string(started.status().message()));
      return 1;
    }
    exposer = *std::move(started);
  }
  auto key_store = std::make_shared<ApiKeyStore>(*std::move(keys));
  // The one access check of both front ends.
  auto access = std::make_shared<AccessGate>(key_store, metrics->get(), config.reflection == ReflectionMode::kOn);
  ServiceGate gate(access);
  signals.OnHangup([&config, &access] { OnHangup(config, *access); });
  const absl::Cleanup no_hangup = [&signals] { signals.OnHangup(nullptr); };
  absl::StatusOr<std::unique_ptr<GrpcListener>> listener = GrpcListener::Bind(config.host, config.port);
  if (!listener.ok()) {
    spdlog::error("cannot listen on {}: {}", config.ListenAddress(), std::string(listener.status().message()));
    return 1;
  }
  const int port = (*listener)->port();
  std::unique_ptr<grpc::Server> server = StartGrpc(config, &gate, access, **listener, *std::move(credentials));
  if (server == nullptr) {
    spdlog::error("cannot start the gRPC server");
    return 1;
  }
  SetHealth(*server, false);
  (*listener)->Start();  // after NOT_SERVING: no client sees the default SERVING
  // The HTTP API: up now (health 503, "model loading"), open once the model is loaded.
  std::unique_ptr<OpenAiServer> http;
  if (config.http_port != 0) {
    absl::StatusOr<std::unique_ptr<OpenAiServer>> started = OpenAiServer::Start(config, access);
    if (!started.ok()) {
      spdlog::error("{}", std::string(started.status().message()));
      (*listener)->Close();
      server->Shutdown(absl::ToChronoTime(absl::Now()));
      server->Wait();
      return 1;
    }
    http = *std::move(started);
  }
  ServerConfig bound = config;
  bound.port = port;
  const std::string address = bound.ListenAddress();
  ServerConfig metrics_bound = config;
  metrics_bound.metrics_port = exposer != nullptr ? exposer->port() : 0;
  spdlog::info("llmserve {} listening on {} (NOT_SERVING while the model loads), {}; metrics {}; HTTP API {}",
               kLlmserveVersion, address, security,
               config.metrics_port == 0 ? std::string("off")
                   : absl::StrCat("on ", config.metrics_tls ? "https://" : "http://", metrics_bound.MetricsAddress(),
                                  "/metrics"),
               http == nullptr ? std::string("off")
                   : absl::StrCat("on ", config.tls.enabled() ? "https://" : "http://", http->address(), "/v1",
                                  has_keys ? " (API keys; /health needs none)" : "", " (",
                                  config.HttpOptions("").Describe(), ")"));

  absl::StatusOr<ModelSetup> setup = SetUpModel(config, metrics->get());
  if (!setup.ok()) {
    spdlog::error("{}", std::string(setup.status().message()));
    http.reset();
    (*listener)->Close();
    server->Shutdown(absl::ToChronoTime(absl::Now()));
    server->Wait();
    return 1;
  }
  if (setup->demo) {
    spdlog::warn("demo model: random weights, its text is meaningless "
                 "(scripts/get-model.sh fetches a real one; then pass --model and --tokenizer)");
  }
  LlmService service(*setup->engine, *setup->tokenizer, setup->info, metrics->get());
  OpenAiService http_service(*setup->engine, *setup->tokenizer, service.limits(), setup->info.model_name,
                             absl::ToUnixSeconds(absl::Now()), metrics->get());
  (*metrics)->OnStats(setup->engine->Stats());  // KV capacity before the first step
  setup->engine->Start();
  gate.Open(&service);
  if (http != nullptr) http->Open(&http_service);
  access->SetPhase(ServingPhase::kServing);
  SetHealth(*server, true);
  spdlog::info("serving on {}: {}; reflection {}", address, setup->summary, ReflectionModeName(config.reflection));

  const int sig = signals.WaitForShutdown();
  spdlog::info("{}: health NOT_SERVING, draining (delay {} s, then up to {} s; a second signal exits at once)",
               sig == SIGTERM ? "SIGTERM" : "SIGINT", config.drain_delay_seconds, config.drain_timeout_seconds);
  Drain(config, *access, **listener, *server, *setup->engine, service, http.get());
  server.reset();  // before the service it forwards to
  http.reset();    // likewise (joins its workers)
  spdlog::info("shut down");
  return 0;
}

}  // namespace llmserve
