#include "tests/integration/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace llmserve::testing {
namespace {

std::chrono::system_clock::time_point After(absl::Duration d) { return absl::ToChronoTime(absl::Now() + d); }

// A fresh log file path under the temp directory.
std::string NewLogPath() {
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::temp_directory_path() / absl::StrCat("llmserve_integration_", getpid());
  std::filesystem::create_directories(dir);
  return (dir / absl::StrCat("server-", counter.fetch_add(1), ".log")).string();
}

}  // namespace

int PickFreePort() {
  // The kernel may hand the same ephemeral port to two binds that do not overlap, so a
  // test asking for a gRPC, an HTTP and a metrics port could get one port twice: each port
  // is handed out at most once in this process.
  static std::mutex mu;
  static std::set<int>* const given = new std::set<int>();
  std::lock_guard<std::mutex> lock(mu);
  for (int attempt = 0; attempt < 64; ++attempt) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    int port = 0;
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
    close(fd);
    if (port == 0) return 0;
    if (given->insert(port).second) return port;
  }
  return 0;
}

std::unique_ptr<ServerProcess> ServerProcess::Launch(const std::vector<std::string>& args, int port) {
  std::unique_ptr<ServerProcess> p(new ServerProcess());
  p->port_ = port > 0 ? port : PickFreePort();
  p->log_path_ = NewLogPath();
  // Everything the child needs is prepared before fork: between fork and exec it only
  // calls async-signal-safe functions (this test process has gRPC threads).
  // Metrics off unless `args` turns them on (a later flag wins): tests run servers in
  // parallel, and the default metrics port is fixed.
  std::vector<std::string> argv = {LLMSERVE_BINARY, "--host=127.0.0.1", absl::StrCat("--port=", p->port_),
                                   "--metrics-port=0"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env = {"OMP_WAIT_POLICY=passive"};
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  std::vector<char*> cargv, cenv;
  for (std::string& a : argv) cargv.push_back(a.data());
  for (std::string& e : env) cenv.push_back(e.data());
  cargv.push_back(nullptr);
  cenv.push_back(nullptr);
  const int log_fd = open(p->log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log_fd < 0 || null_fd < 0) return p;
  p->pid_ = fork();
  if (p->pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a crashed or killed test leaves no server behind
    dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  close(log_fd);
  close(null_fd);
  return p;
}

std::unique_ptr<ServerProcess> ServerProcess::Start(const std::vector<std::string>& args, std::string* error,
                                                    absl::Duration timeout,
                                                    const llmserve::client::Connection* connection) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::unique_ptr<ServerProcess> p = Launch(args);
    if (connection != nullptr) p->connection_ = *connection;
    if (p->pid_ <= 0) {
      *error = "could not start " LLMSERVE_BINARY;
      return nullptr;
    }
    if (p->WaitServing(timeout)) return p;
    int code = 0;
    const std::string log = p->Log();
    if (p->Exited(&code) && log.find("cannot listen") != std::string::npos) continue;  // the port was taken
    *error = absl::StrCat("llmserve did not become SERVING (exit code ", p->exited_ ? code : -1, "); its log:\n", log);
    return nullptr;
  }
  *error = "no free port after 5 attempts";
  return nullptr;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    WaitExit(absl::Seconds(10));
  }
  if (::testing::Test::HasFailure()) {
    std::cerr << "---- llmserve log (" << log_path_ << ") ----\n" << Log() << "---- end of log ----\n";
  } else if (std::getenv("LLMSERVE_TEST_KEEP_LOGS") == nullptr) {
    std::error_code ec;
    std::filesystem::remove(log_path_, ec);
    std::filesystem::remove(std::filesystem::path(log_path_).parent_path(), ec);  // only if empty
  }
}

std::string ServerProcess::address() const { return absl::StrCat("127.0.0.1:", port_); }

std::shared_ptr<grpc::Channel> ServerProcess::channel() {
  if (channel_ == nullptr) {
    // "ipv4:" skips the DNS resolver (and its re-resolution cooldown after a failure).
    channel_ = connection_.credentials == nullptr
                   ? grpc::CreateChannel("ipv4:" + address(), grpc::InsecureChannelCredentials())
                   : connection_.NewChannel("ipv4:" + address());
  }
  return channel_;
}

std::unique_ptr<llmserve::v1::LlmService::Stub> ServerProcess::stub() {
  return llmserve::v1::LlmService::NewStub(channel());
}

grpc::health::v1::HealthCheckResponse::ServingStatus ServerProcess::Health(const std::string& service,
                                                                           grpc::Status* status) {
  auto health = grpc::health::v1::Health::NewStub(channel());
  grpc::ClientContext ctx;
  ctx.set_deadline(After(absl::Seconds(2)));
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  const grpc::Status s = health->Check(&ctx, req, &resp);
  if (status != nullptr) *status = s;
  return s.ok() ? resp.status() : grpc::health::v1::HealthCheckResponse::UNKNOWN;
}

bool PortAccepts(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

bool ServerProcess::WaitServing(absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  int code = 0;
  // The channel's first connection attempt must not fail: gRPC then backs off for seconds.
  while (!PortAccepts(port_)) {
    if (Exited(&code) || absl::Now() >= end) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  while (absl::Now() < end) {
    if (Exited(&code)) return false;
    if (Health("") == grpc::health::v1::HealthCheckResponse::SERVING) return true;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return false;
}

void ServerProcess::Signal(int sig) {
  if (pid_ > 0 && !exited_) kill(pid_, sig);
}

bool ServerProcess::Exited(int* exit_code) {
  if (!exited_ && pid_ > 0) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
  }
  if (exited_) *exit_code = exit_code_;
  return exited_;
}

int ServerProcess::WaitExit(absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  int code = -1;
  while (!Exited(&code)) {
    if (absl::Now() >= end) {
      ADD_FAILURE() << "llmserve (pid " << pid_ << ") did not exit within " << timeout << ": killing it";
      kill(pid_, SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
      exited_ = true;
      exit_code_ = 128 + SIGKILL;
      return exit_code_;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return code;
}

std::string ServerProcess::Log() const {
  std::ifstream in(log_path_, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

StreamResult Generate(llmserve::v1::LlmService::Stub& stub, const llmserve::v1::GenerateRequest& request,
                      absl::Duration deadline) {
  StreamResult out;
  grpc::ClientContext ctx;
  if (deadline != absl::InfiniteDuration()) ctx.set_deadline(After(deadline));
  std::unique_ptr<grpc::ClientReader<llmserve::v1::GenerateResponse>> reader = stub.Generate(&ctx, request);
  llmserve::v1::GenerateResponse msg;
  while (reader->Read(&msg)) {
    if (out.has_final) out.message_after_final = true;
    if (msg.has_chunk()) {
      ++out.chunks;
      out.ids.insert(out.ids.end(), msg.chunk().ids().begin(), msg.chunk().ids().end());
      out.text += msg.chunk().text();
      out.logprobs += msg.chunk().logprobs_size();
    } else if (msg.has_final()) {
      out.has_final = true;
      out.final_msg = msg.final();
    }
  }
  out.status = reader->Finish();
  return out;
}

llmserve::v1::ServerInfo ServerInfo(llmserve::v1::LlmService::Stub& stub) {
  grpc::ClientContext ctx;
  ctx.set_deadline(After(absl::Seconds(5)));
  llmserve::v1::ServerInfo info;
  const grpc::Status s = stub.GetServerInfo(&ctx, llmserve::v1::GetServerInfoRequest(), &info);
  EXPECT_TRUE(s.ok()) << "GetServerInfo: " << s.error_code() << " " << s.error_message();
  return info;
}

bool WaitBlocksFree(llmserve::v1::LlmService::Stub& stub, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (true) {
    const llmserve::v1::ServerInfo info = ServerInfo(stub);
    if (info.kv_blocks_used() == 0 && info.running_requests() == 0 && info.waiting_requests() == 0) return true;
    if (absl::Now() >= end) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
}

llmserve::v1::GenerateRequest GreedyRequest(const std::string& text, int32_t max_tokens) {
  llmserve::v1::GenerateRequest r;
  r.set_text(text);
  r.set_temperature(0.0f);
  r.set_max_tokens(max_tokens);
  return r;
}

std::vector<std::string> Stories260KArgs(const std::string& model, const std::string& tokenizer) {
  return {"--model=" + model, "--tokenizer=" + tokenizer, "--weight-dtype=f32", "--threads=2"};
}

}  // namespace llmserve::testing
