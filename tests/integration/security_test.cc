// The real llmserve binary behind TLS, mutual TLS and API keys (docs/OPERATIONS.md
// "Security"), with certificates made by tests/integration/make_test_certs.sh (openssl):
// llmctl with the CA and key streams a completion, without the key gets UNAUTHENTICATED, a
// plaintext client cannot connect, mutual TLS refuses clients without an accepted
// certificate, a renewed certificate is served without a restart, SIGHUP re-reads the
// keys, bad files are start-up errors; reflection needs the key too (unless
// --reflection=open) while health never does; and the per-connection stream cap.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/connect_options.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/integration/reflection_client.h"
#include "tests/integration/server_process.h"
#include "tests/util/subprocess.h"

namespace llmserve::testing {
namespace {

namespace v1 = ::llmserve::v1;
namespace fs = std::filesystem;

constexpr char kKey[] = "first-key-0123456789";
constexpr char kSecondKey[] = "second-key-0123456789";  // in the server's file as its sha256

void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Replaces `path` atomically (write beside it, rename), as a certificate renewal should.
void ReplaceFile(const fs::path& path, const fs::path& from) {
  const fs::path tmp = path.string() + ".new";
  fs::copy_file(from, tmp, fs::copy_options::overwrite_existing);
  fs::rename(tmp, path);
}

std::string Sha256Hex(const std::string& text) {
  Subprocess p({"/usr/bin/sha256sum"}, text);
  ProcessResult r = p.Wait();
  return r.out.substr(0, 64);
}

class SecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / absl::StrCat("llmserve-security-test-", getpid()));
    fs::create_directories(*dir_);
    Subprocess p({"/bin/bash", LLMSERVE_SOURCE_DIR "/tests/integration/make_test_certs.sh", dir_->string()});
    const ProcessResult r = p.Wait();
    ASSERT_EQ(r.exit_code, 0) << r.err;
    WriteFile(*dir_ / "keys.txt", absl::StrCat("# test keys\n", kKey, "\nsha256:", Sha256Hex(kSecondKey), "\n"));
    WriteFile(*dir_ / "key.txt", absl::StrCat(kKey, "\n"));
    WriteFile(*dir_ / "wrong-key.txt", "not-the-key-0123456789\n");
    WriteFile(*dir_ / "bad-keys.txt", "# a key too short to be one\ntoo-short\n");
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*dir_, ec);
    delete dir_;
  }
  static std::string File(const std::string& name) { return (*dir_ / name).string(); }

  // A resolved client connection (FAILs the test when the options are bad).
  static client::Connection Connect(const client::ConnectOptions& o) {
    absl::StatusOr<client::Connection> c = client::Resolve(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : client::Connection();
  }
  static client::ConnectOptions Tls(const std::string& cert = "", const std::string& key = "") {
    client::ConnectOptions o;
    o.tls_ca = File("ca.pem");
    if (!cert.empty()) o.tls_cert = File(cert);
    if (!key.empty()) o.tls_key = File(key);
    return o;
  }

  // GetServerInfo over a fresh connection of its own; with `key` ("" = none).
  static grpc::Status Info(const std::string& address, const client::Connection& c, const std::string& key = "",
                           std::string* server_cn = nullptr) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto stub = v1::LlmService::NewStub(c.NewChannel("ipv4:" + address, args));
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    if (!key.empty()) ctx.AddMetadata("authorization", absl::StrCat("Bearer ", key));
    v1::ServerInfo info;
    const grpc::Status st = stub->GetServerInfo(&ctx, v1::GetServerInfoRequest(), &info);
    if (server_cn != nullptr && ctx.auth_context() != nullptr) {
      for (const grpc::string_ref& v : ctx.auth_context()->FindPropertyValues("x509_common_name")) {
        *server_cn = std::string(v.data(), v.size());
      }
    }
    return st;
  }

  static ProcessResult Llmctl(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {LLMCTL_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    Subprocess p(argv);
    return p.Wait();
  }

  static fs::path* dir_;
};

fs::path* SecurityTest::dir_ = nullptr;

TEST_F(SecurityTest, TlsWithApiKeysStreamsOnlyToClientsWithTheKey) {
  const client::Connection tls = Connect(Tls());
  std::string error;
  auto server = ServerProcess::Start({"--threads=2", "--tls-cert", File("server.pem"), "--tls-key", File("server.key"),
                                      "--api-key-file", File("keys.txt")},
                                     &error, absl::Seconds(60), &tls);  // health: TLS, no key
  ASSERT_NE(server, nullptr) << error;
  const std::string addr = server->address();

  const ProcessResult ok = Llmctl({"--addr", addr, "--tls-ca", File("ca.pem"), "--api-key-file", File("key.txt"),
                                   "generate", "--max-tokens", "8", "--ignore-eos", "Once upon"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.err.find("completion_tokens=8"), std::string::npos) << ok.err;

  const ProcessResult no_key = Llmctl({"--addr", addr, "--tls-ca", File("ca.pem"), "generate", "Once upon"});
  EXPECT_EQ(no_key.exit_code, 1);
  EXPECT_NE(no_key.err.find("UNAUTHENTICATED"), std::string::npos) << no_key.err;
  const ProcessResult wrong = Llmctl({"--addr", addr, "--tls-ca", File("ca.pem"), "--api-key-file",
                                      File("wrong-key.txt"), "info"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("UNAUTHENTICATED"), std::string::npos) << wrong.err;
  // Health needs no key.
  const ProcessResult health = Llmctl({"--addr", addr, "--tls-ca", File("ca.pem"), "health"});
  EXPECT_EQ(health.exit_code, 0) << health.err;

  // The hashed key is accepted too.
  EXPECT_TRUE(Info(addr, tls, kSecondKey).ok());
  // A plaintext client never gets as far as a status from the service.
  const grpc::Status plain = Info(addr, Connect(client::ConnectOptions()), kKey);
  EXPECT_EQ(plain.error_code(), grpc::UNAVAILABLE) << plain.error_message();
  // Nor does a client that does not trust the server's CA.
  client::ConnectOptions rogue_trust;
  rogue_trust.tls_ca = File("rogue-ca.pem");
  EXPECT_EQ(Info(addr, Connect(rogue_trust), kKey).error_code(), grpc::UNAVAILABLE);

  const std::string log = server->Log();
  EXPECT_NE(log.find("TLS, files re-read every"), std::string::npos) << log;
  EXPECT_NE(log.find("2 API keys"), std::string::npos) << log;
  EXPECT_EQ(log.find(kKey), std::string::npos) << "a key was logged";
  EXPECT_EQ(log.find("not-the-key"), std::string::npos) << "a presented key was logged";
}

TEST_F(SecurityTest, MetricsOverHttpsCountTheRefusedCalls) {
  const client::Connection tls = Connect(Tls());
  const int metrics_port = PickFreePort();
  std::string error;
  auto server = ServerProcess::Start({"--threads=2", "--tls-cert", File("server.pem"), "--tls-key", File("server.key"),
                                      "--api-key-file", File("keys.txt"), "--metrics-tls", "on", "--metrics-port",
                                      std::to_string(metrics_port)},
                                     &error, absl::Seconds(60), &tls);
  ASSERT_NE(server, nullptr) << error;
  EXPECT_EQ(Info(server->address(), tls).error_code(), grpc::UNAUTHENTICATED);
  EXPECT_EQ(Info(server->address(), tls, "wrong-key-0123456789").error_code(), grpc::UNAUTHENTICATED);
  EXPECT_TRUE(Info(server->address(), tls, kKey).ok());

  httplib::SSLClient scraper("127.0.0.1", metrics_port);
  scraper.set_ca_cert_path(File("ca.pem").c_str());
  scraper.enable_server_certificate_verification(true);
  scraper.set_read_timeout(10);
  httplib::Result got = scraper.Get("/metrics");
  ASSERT_TRUE(got) << httplib::to_string(got.error());
  EXPECT_EQ(got->status, 200);
  EXPECT_NE(got->body.find("llmserve_unauthenticated_requests_total{model_name=\"demo\"} 2"), std::string::npos)
      << got->body;
  EXPECT_NE(server->Log().find(absl::StrCat("metrics on https://127.0.0.1:", metrics_port)), std::string::npos);
  httplib::Client plain("127.0.0.1", metrics_port);
  plain.set_read_timeout(5);
  httplib::Result refused = plain.Get("/metrics");
  EXPECT_TRUE(!refused || refused->body.find("llmserve_") == std::string::npos) << "metrics served over plain HTTP";
}

// Reflection names every service and method: with keys it wants one like llmserve.v1
// (refused: UNAUTHENTICATED, nothing listed, counted); health stays open.
TEST_F(SecurityTest, ReflectionNeedsTheKeyWhereKeysAreSet) {
  const int metrics_port = PickFreePort();
  std::string error;
  auto server = ServerProcess::Start({"--threads=2", "--api-key-file", File("keys.txt"), "--metrics-port",
                                      std::to_string(metrics_port)},
                                     &error);  // waits on health, without a key
  ASSERT_NE(server, nullptr) << error;
  EXPECT_EQ(server->Health(""), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(server->Health("llmserve.v1.LlmService"), grpc::health::v1::HealthCheckResponse::SERVING);

  const ReflectionListing none = ListServices(server->channel());
  EXPECT_EQ(none.status.error_code(), grpc::UNAUTHENTICATED) << none.status.error_message();
  EXPECT_EQ(none.status.error_message(), "no API key: send metadata 'authorization: Bearer <key>'");
  EXPECT_EQ(none.error_code, 16) << "error_response of " << none.raw.size() << " bytes: " << none.error_message;
  EXPECT_EQ(none.error_message, none.status.error_message());
  EXPECT_TRUE(none.services.empty());
  EXPECT_EQ(none.raw.find("llmserve.v1"), std::string::npos) << "a refused caller saw a service name";

  const ReflectionListing wrong = ListServices(server->channel(), "Bearer not-the-key-0123456789");
  EXPECT_EQ(wrong.status.error_code(), grpc::UNAUTHENTICATED);
  EXPECT_EQ(wrong.status.error_message(), "the API key is not valid");
  EXPECT_TRUE(wrong.services.empty());

  for (const char* key : {kKey, kSecondKey}) {
    const ReflectionListing keyed = ListServices(server->channel(), absl::StrCat("Bearer ", key));
    EXPECT_TRUE(keyed.status.ok()) << keyed.status.error_code() << ": " << keyed.status.error_message();
    EXPECT_EQ(keyed.error_code, 0) << keyed.error_message;
    EXPECT_NE(std::find(keyed.services.begin(), keyed.services.end(), "llmserve.v1.LlmService"), keyed.services.end())
        << keyed.raw;
  }

  httplib::Client scraper("127.0.0.1", metrics_port);  // /metrics needs no key
  scraper.set_read_timeout(10);
  httplib::Result got = scraper.Get("/metrics");
  ASSERT_TRUE(got) << httplib::to_string(got.error());
  EXPECT_EQ(got->status, 200);
  EXPECT_NE(got->body.find("llmserve_unauthenticated_requests_total{model_name=\"demo\"} 2"), std::string::npos)
      << got->body;
  EXPECT_NE(server->Log().find("2 API keys (llmserve.v1 and reflection need one, health none)"), std::string::npos)
      << server->Log();
}

TEST_F(SecurityTest, OpenReflectionIsServedWithoutAKeyButTheApiIsNot) {
  std::string error;
  auto server =
      ServerProcess::Start({"--threads=2", "--api-key-file", File("keys.txt"), "--reflection=open"}, &error);
  ASSERT_NE(server, nullptr) << error;
  const ReflectionListing open = ListServices(server->channel());
  EXPECT_TRUE(open.status.ok()) << open.status.error_code() << ": " << open.status.error_message();
  EXPECT_NE(std::find(open.services.begin(), open.services.end(), "llmserve.v1.LlmService"), open.services.end())
      << open.raw;
  EXPECT_EQ(Info(server->address(), Connect(client::ConnectOptions())).error_code(), grpc::UNAUTHENTICATED);
  EXPECT_NE(server->Log().find("health and reflection (--reflection=open) none"), std::string::npos) << server->Log();
}

TEST_F(SecurityTest, MutualTlsRefusesClientsWithoutAnAcceptedCertificate) {
  const client::Connection with_cert = Connect(Tls("client.pem", "client.key"));
  std::string error;
  auto server = ServerProcess::Start({"--threads=2", "--tls-cert", File("server.pem"), "--tls-key", File("server.key"),
                                      "--tls-client-ca", File("ca.pem")},
                                     &error, absl::Seconds(60), &with_cert);
  ASSERT_NE(server, nullptr) << error;
  const std::string addr = server->address();
  EXPECT_TRUE(Info(addr, with_cert).ok());
  const grpc::Status no_cert = Info(addr, Connect(Tls()));
  EXPECT_EQ(no_cert.error_code(), grpc::UNAVAILABLE) << no_cert.error_message();
  const grpc::Status rogue = Info(addr, Connect(Tls("rogue.pem", "rogue.key")));
  EXPECT_EQ(rogue.error_code(), grpc::UNAVAILABLE) << rogue.error_message();
  const ProcessResult ctl = Llmctl({"--addr", addr, "--tls-ca", File("ca.pem"), "--tls-cert", File("client.pem"),
                                    "--tls-key", File("client.key"), "generate", "--max-tokens", "4", "Hi"});
  EXPECT_EQ(ctl.exit_code, 0) << ctl.err;
  EXPECT_NE(server->Log().find("mutual TLS"), std::string::npos);
}

// The HTTP API (--http-port) serves the gRPC port's certificate and checks the same keys;
// with --tls-client-ca it wants a client certificate too.
TEST_F(SecurityTest, HttpApiUsesTheSameTlsAndKeys) {
  const client::Connection with_cert = Connect(Tls("client.pem", "client.key"));
  const int http_port = PickFreePort();
  std::string error;
  auto server = ServerProcess::Start({"--threads=2", "--tls-cert", File("server.pem"), "--tls-key", File("server.key"),
                                      "--api-key-file", File("keys.txt"), "--tls-client-ca", File("ca.pem"),
                                      absl::StrCat("--http-port=", http_port)},
                                     &error, absl::Seconds(60), &with_cert);
  ASSERT_NE(server, nullptr) << error;
  const auto https = [&](bool client_cert) {
    auto c = client_cert ? std::make_unique<httplib::SSLClient>("127.0.0.1", http_port, File("client.pem"),
                                                                File("client.key"))
                         : std::make_unique<httplib::SSLClient>("127.0.0.1", http_port);
    c->set_ca_cert_path(File("ca.pem").c_str());
    c->enable_server_certificate_verification(true);
    c->set_connection_timeout(10);
    c->set_read_timeout(30);
    return c;
  };
  const std::string body = R"({"prompt": "Once upon", "max_tokens": 8, "ignore_eos": true})";
  httplib::Result ok = https(true)->Post("/v1/completions", {{"Authorization", absl::StrCat("Bearer ", kKey)}}, body,
                                         "application/json");
  ASSERT_TRUE(ok) << httplib::to_string(ok.error());
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_NE(ok->body.find("\"completion_tokens\":8"), std::string::npos) << ok->body;
  httplib::Result second = https(true)->Post("/v1/completions", {{"Authorization", absl::StrCat("Bearer ", kSecondKey)}},
                                             body, "application/json");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 200) << second->body;
  httplib::Result no_key = https(true)->Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(no_key);
  EXPECT_EQ(no_key->status, 401);
  httplib::Result wrong = https(true)->Get("/v1/models", {{"Authorization", "Bearer not-the-key-0123456789"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  httplib::Result health = https(true)->Get("/health");  // no key needed
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_FALSE(https(false)->Get("/health")) << "served a client without a certificate";
  httplib::Client plain("127.0.0.1", http_port);
  plain.set_connection_timeout(5);
  plain.set_read_timeout(5);
  httplib::Result clear = plain.Get("/health");
  EXPECT_TRUE(!clear || clear->status != 200) << "answered plain HTTP";
  EXPECT_NE(server->Log().find("HTTP API on https://"), std::string::npos) << server->Log();
}

TEST_F(SecurityTest, ARenewedCertificateIsServedWithoutARestart) {
  const fs::path live = *dir_ / "live";
  fs::create_directories(live);
  fs::copy_file(*dir_ / "server.pem", live / "tls.crt", fs::copy_options::overwrite_existing);
  fs::copy_file(*dir_ / "server.key", live / "tls.key", fs::copy_options::overwrite_existing);
  const client::Connection tls = Connect(Tls());
  std::string error;
  auto server = ServerProcess::Start({"--threads=2", "--tls-cert", (live / "tls.crt").string(), "--tls-key",
                                      (live / "tls.key").string(), "--tls-reload-interval", "1"},
                                     &error, absl::Seconds(60), &tls);
  ASSERT_NE(server, nullptr) << error;
  std::string cn;
  ASSERT_TRUE(Info(server->address(), tls, "", &cn).ok());
  EXPECT_EQ(cn, "llmserve-test-server");

  ReplaceFile(live / "tls.key", *dir_ / "renewed.key");
  ReplaceFile(live / "tls.crt", *dir_ / "renewed.pem");
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (cn != "llmserve-test-renewed" && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(200));
    cn.clear();
    const grpc::Status st = Info(server->address(), tls, "", &cn);
    // Between the two renames the pair may not match for a moment; a handshake then fails.
    if (!st.ok()) cn.clear();
  }
  EXPECT_EQ(cn, "llmserve-test-renewed") << "the renewed certificate was not served within 20 s";
  int code = 0;
  EXPECT_FALSE(server->Exited(&code));
}

TEST_F(SecurityTest, SighupRereadsTheApiKeysAndABadFileKeepsThem) {
  const fs::path keys = *dir_ / "rotating-keys.txt";
  WriteFile(keys, absl::StrCat(kKey, "\n"));
  std::string error;
  auto server = ServerProcess::Start({"--threads=2", "--api-key-file", keys.string()}, &error);
  ASSERT_NE(server, nullptr) << error;
  const client::Connection plain = Connect(client::ConnectOptions());
  const std::string addr = server->address();
  ASSERT_TRUE(Info(addr, plain, kKey).ok());
  EXPECT_EQ(Info(addr, plain, kSecondKey).error_code(), grpc::UNAUTHENTICATED);

  WriteFile(keys, absl::StrCat(kSecondKey, "\n"));
  server->Signal(SIGHUP);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!Info(addr, plain, kSecondKey).ok() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(50));
  EXPECT_TRUE(Info(addr, plain, kSecondKey).ok());
  EXPECT_EQ(Info(addr, plain, kKey).error_code(), grpc::UNAUTHENTICATED);

  WriteFile(keys, "too-short\n");
  server->Signal(SIGHUP);
  const absl::Time logged = absl::Now() + absl::Seconds(10);
  while (server->Log().find("keeping the API keys in use") == std::string::npos && absl::Now() < logged) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_NE(server->Log().find("keeping the API keys in use"), std::string::npos) << server->Log();
  EXPECT_TRUE(Info(addr, plain, kSecondKey).ok());
  EXPECT_EQ(server->Health(""), grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST_F(SecurityTest, BadTlsOrKeyFilesAreStartupErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--tls-cert", File("server.pem"), "--tls-key", File("client.key")}, "is not the key of the certificate"},
      {{"--tls-cert", File("missing.pem"), "--tls-key", File("server.key")}, "cannot read the file"},
      {{"--tls-cert", File("keys.txt"), "--tls-key", File("server.key")}, "not a PEM certificate"},
      {{"--tls-cert", File("server.pem"), "--tls-key", File("server.key"), "--tls-client-ca", File("keys.txt")},
       "not a PEM certificate bundle"},
      {{"--api-key-file", File("missing-keys.txt")}, "--api-key-file="},
      {{"--api-key-file", File("bad-keys.txt")}, "bad-keys.txt line 2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    std::vector<std::string> args = {"--threads=2"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto server = ServerProcess::Launch(args);
    EXPECT_EQ(server->WaitExit(absl::Seconds(30)), 1);
    EXPECT_NE(server->Log().find(c.message), std::string::npos) << server->Log();
  }
}

TEST_F(SecurityTest, StreamsPerConnectionAreCapped) {
  std::string error;
  auto server = ServerProcess::Start({"--threads=2", "--max-streams-per-connection", "2"}, &error);
  ASSERT_NE(server, nullptr) << error;
  auto stub = server->stub();  // one connection for all the streams
  // The watcher needs its own TCP connection: channels with equal arguments share one
  // (gRPC's global subchannel pool), and its calls would then queue behind the cap.
  grpc::ChannelArguments own_connection;
  own_connection.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto watcher = v1::LlmService::NewStub(
      Connect(client::ConnectOptions()).NewChannel("ipv4:" + server->address(), own_connection));
  ServerInfo(*watcher);  // connected before the streams start
  std::atomic<bool> done{false};
  int most = 0;
  std::thread watch([&] {
    while (!done.load()) {
      const v1::ServerInfo info = ServerInfo(*watcher);
      most = std::max(most, info.running_requests() + info.waiting_requests());
      absl::SleepFor(absl::Milliseconds(2));
    }
  });
  std::vector<std::thread> calls;
  std::vector<StreamResult> results(6);
  for (size_t i = 0; i < results.size(); ++i) {
    calls.emplace_back([&, i] {
      v1::GenerateRequest r = GreedyRequest("Once upon a time", 400);
      r.set_ignore_eos(true);
      results[i] = Generate(*stub, r);
    });
  }
  for (std::thread& t : calls) t.join();
  done.store(true);
  watch.join();
  for (const StreamResult& r : results) {
    EXPECT_TRUE(r.status.ok()) << r.status.error_message();
    EXPECT_EQ(r.final_msg.usage().completion_tokens(), 400);
  }
  EXPECT_GE(most, 1) << "the watcher never saw a request in flight";
  EXPECT_LE(most, 2) << "one connection had more than 2 calls in the engine at once";
}

}  // namespace
}  // namespace llmserve::testing
