// Subprocess: runs a program (no shell) with piped stdin, stdout and stderr, for tests
// of command-line tools. Between fork and exec the child only calls async-signal-safe
// functions, so it is safe in a test process that has gRPC threads running.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

namespace llmserve::testing {

// What a finished child left.
struct ProcessResult {
  int exit_code = -1;  // exit status, or 128 + signal when killed by one
  std::string out;     // all of its stdout
  std::string err;     // all of its stderr
};

class Subprocess {
 public:
  // Starts argv[0] (a path) with `argv`; `stdin_data` is written to its stdin, which is
  // then closed. `env` entries ("NAME=value") are added to this process's environment.
  Subprocess(const std::vector<std::string>& argv, const std::string& stdin_data = "",
             const std::vector<std::string>& env = {}) {
    std::vector<std::string> env_strings = env;
    for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
    std::vector<char*> cargv, cenv;
    for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    for (const std::string& e : env_strings) cenv.push_back(const_cast<char*>(e.c_str()));
    cargv.push_back(nullptr);
    cenv.push_back(nullptr);
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      execve(cargv[0], cargv.data(), cenv.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    out_fd_ = out[0];
    err_fd_ = err[0];
    signal(SIGPIPE, SIG_IGN);  // a child that exits early must not kill the test
    for (size_t done = 0; done < stdin_data.size();) {
      const ssize_t n = write(in[1], stdin_data.data() + done, stdin_data.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    close(in[1]);
  }

  ~Subprocess() {
    if (pid_ > 0 && !waited_) {
      kill(pid_, SIGKILL);
      Wait();
    }
  }

  // The child's pid (<= 0: it could not be started).
  pid_t pid() const { return pid_; }

  // Reads stdout until it contains `text` or ends; true if it was seen.
  bool ReadStdoutUntil(const std::string& text) {
    while (result_.out.find(text) == std::string::npos) {
      if (!ReadSome(out_fd_, &result_.out)) return false;
    }
    return true;
  }

  // Reads both pipes to their end and reaps the child.
  ProcessResult Wait() {
    if (waited_ || pid_ <= 0) return result_;
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        if (!ReadSome(fds[i].fd, i == 0 ? &result_.out : &result_.err)) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
        }
      }
    }
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    result_.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    waited_ = true;
    return result_;
  }

 private:
  // Appends what one read() gives; false at end of file or on error.
  static bool ReadSome(int fd, std::string* to) {
    char buf[4096];
    ssize_t n;
    do {
      n = read(fd, buf, sizeof(buf));
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    to->append(buf, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  bool waited_ = false;
  ProcessResult result_;
};

// Runs a program to completion.
inline ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& stdin_data = "",
                                const std::vector<std::string>& env = {}) {
  Subprocess p(argv, stdin_data, env);
  return p.Wait();
}

}  // namespace llmserve::testing
