// NginxProcess: a real nginx (Debian's, with the gRPC proxy module) run as a child of the
// test, as a gRPC load balancer in front of llmserve replicas on loopback.
//
//   Start(template, upstream_ports, &error)  writes the config from tests/scaleout/nginx.conf.in
//                                            into a fresh temp dir, picks a free port, runs
//                                            nginx -p DIR -c DIR/nginx.conf (daemon off) and waits
//                                            (bounded) until its port accepts connections
//   ~NginxProcess                            SIGQUIT, bounded wait, SIGKILL; removes the dir
//                                            unless the test failed (then prints error.log)
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace llmserve::testing {

// The nginx binary: $NGINX if set, else /usr/sbin/nginx; "" if it is not executable.
std::string FindNginx();

class NginxProcess {
 public:
  // nullptr (the reason in *error) if nginx is missing, exits, or does not listen in time.
  static std::unique_ptr<NginxProcess> Start(const std::string& nginx, const std::string& conf_template,
                                             const std::vector<int>& upstream_ports, std::string* error);
  ~NginxProcess();

  int port() const { return port_; }
  // "127.0.0.1:port".
  std::string address() const;
  // error.log and access.log so far.
  std::string Logs() const;

 private:
  NginxProcess() = default;

  pid_t pid_ = -1;
  int port_ = 0;
  std::string dir_;
};

}  // namespace llmserve::testing
