#include "client/connect_options.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "grpcpp/create_channel.h"

namespace llmserve::client {
namespace {

absl::StatusOr<std::string> ReadFile(const char* flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::FailedPreconditionError(absl::StrCat("--", flag, "=", path, ": cannot read the file"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::Status ConnectOptions::Validate() const {
  if (tls_cert.empty() != tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together (the client certificate and its key)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadApiKey(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile("api-key-file", path);
  if (!text.ok()) return text.status();
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty() && line.front() != '#') return std::string(line);
  }
  return absl::FailedPreconditionError(absl::StrCat("--api-key-file=", path, ": no key in the file"));
}

absl::StatusOr<Connection> Resolve(const ConnectOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  Connection c;
  if (!options.UsesTls()) {
    c.credentials = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca.empty()) {
      absl::StatusOr<std::string> ca = ReadFile("tls-ca", options.tls_ca);
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *std::move(ca);
    }
    if (!options.tls_cert.empty()) {
      absl::StatusOr<std::string> cert = ReadFile("tls-cert", options.tls_cert);
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key = ReadFile("tls-key", options.tls_key);
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *std::move(cert);
      ssl.pem_private_key = *std::move(key);
    }
    c.credentials = grpc::SslCredentials(ssl);
    c.server_name = options.tls_server_name;
  }
  if (!options.api_key_file.empty()) {
    absl::StatusOr<std::string> key = ReadApiKey(options.api_key_file);
    if (!key.ok()) return key.status();
    c.api_key = *std::move(key);
  }
  return c;
}

void Connection::ApplyTo(grpc::ChannelArguments* args) const {
  if (!server_name.empty()) args->SetSslTargetNameOverride(server_name);
}

std::shared_ptr<grpc::Channel> Connection::NewChannel(const std::string& target, grpc::ChannelArguments args) const {
  ApplyTo(&args);
  return grpc::CreateCustomChannel(target, credentials, args);
}

void Connection::Authorize(grpc::ClientContext* ctx) const {
  if (!api_key.empty()) ctx->AddMetadata("authorization", absl::StrCat("Bearer ", api_key));
}

}  // namespace llmserve::client
