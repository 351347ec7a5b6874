#include "tests/scaleout/nginx_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"

namespace llmserve::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// waitpid without blocking; true (and *status) once `pid` has exited.
bool Reaped(pid_t pid, int* status) { return waitpid(pid, status, WNOHANG) == pid; }

}  // namespace

std::string FindNginx() {
  const char* env = std::getenv("NGINX");
  const std::string path = (env != nullptr && *env != '\0') ? env : "/usr/sbin/nginx";
  return access(path.c_str(), X_OK) == 0 ? path : "";
}

std::unique_ptr<NginxProcess> NginxProcess::Start(const std::string& nginx, const std::string& conf_template,
                                                  const std::vector<int>& upstream_ports, std::string* error) {
  std::unique_ptr<NginxProcess> p(new NginxProcess());
  p->dir_ = (std::filesystem::temp_directory_path() / absl::StrCat("llmserve_scaleout_nginx_", getpid())).string();
  std::filesystem::remove_all(p->dir_);
  std::filesystem::create_directories(p->dir_);
  // Workers of a root master run as nobody: they must be able to use the temp paths.
  std::filesystem::permissions(p->dir_, std::filesystem::perms::all);
  const std::string tmpl = ReadFile(conf_template);
  if (tmpl.empty()) {
    *error = "cannot read " + conf_template;
    return nullptr;
  }
  std::string upstreams;
  for (int port : upstream_ports) {
    absl::StrAppend(&upstreams, "    server 127.0.0.1:", port, " max_fails=1 fail_timeout=1s;\n");
  }
  for (int attempt = 0; attempt < 5; ++attempt) {
    p->port_ = PickFreePort();
    const std::string conf = p->dir_ + "/nginx.conf";
    {
      std::ofstream out(conf);
      out << absl::StrReplaceAll(tmpl, {{"@DIR@", p->dir_}, {"@PORT@", absl::StrCat(p->port_)},
                                        {"@UPSTREAMS@", upstreams}});
    }
    std::vector<std::string> argv = {nginx, "-p", p->dir_, "-c", conf, "-e", p->dir_ + "/error.log"};
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    const std::string out_path = p->dir_ + "/stderr.log";
    const int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out_fd < 0) {
      *error = "cannot open " + out_path;
      return nullptr;
    }
    p->pid_ = fork();
    if (p->pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // a killed test leaves no nginx behind
      dup2(out_fd, 1);
      dup2(out_fd, 2);
      execv(cargv[0], cargv.data());
      _exit(127);
    }
    close(out_fd);
    const absl::Time end = absl::Now() + absl::Seconds(20);
    int status = 0;
    bool exited = false;
    while (absl::Now() < end) {
      if (Reaped(p->pid_, &status)) {
        exited = true;
        break;
      }
      if (PortAccepts(p->port_)) return p;
      absl::SleepFor(absl::Milliseconds(20));
    }
    if (!exited) break;
    p->pid_ = -1;
    if (p->Logs().find("Address already in use") == std::string::npos) break;  // else: the port was taken
  }
  *error = absl::StrCat("nginx did not start listening on 127.0.0.1:", p->port_, "; its logs:\n", p->Logs());
  return nullptr;
}

NginxProcess::~NginxProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGQUIT);  // graceful
    int status = 0;
    bool reaped = false;
    for (const absl::Time end = absl::Now() + absl::Seconds(10); !reaped && absl::Now() < end;) {
      reaped = Reaped(pid_, &status);
      if (!reaped) absl::SleepFor(absl::Milliseconds(20));
    }
    if (!reaped) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
  }
  if (::testing::Test::HasFailure()) {
    std::cerr << "---- nginx logs (" << dir_ << ") ----\n" << Logs() << "---- end of nginx logs ----\n";
  } else if (!dir_.empty() && std::getenv("LLMSERVE_TEST_KEEP_LOGS") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string NginxProcess::address() const { return absl::StrCat("127.0.0.1:", port_); }

std::string NginxProcess::Logs() const {
  return absl::StrCat("[stderr]\n", ReadFile(dir_ + "/stderr.log"), "[error.log]\n", ReadFile(dir_ + "/error.log"),
                      "[access.log]\n", ReadFile(dir_ + "/access.log"));
}

}  // namespace llmserve::testing
