#include "common/tls.h"

#include <grpc/grpc_security_constants.h>

#include <utility>
#include <vector>

#include "common/small_file.h"

namespace accumulus {
namespace {

// A certificate chain or key is kilobytes; a megabyte is some other file.
constexpr size_t kMaxPemBytes = size_t{1} << 20;

// The PEM file a flag names: readable, and with a PEM block of `kind`
// ("CERTIFICATE", "PRIVATE KEY": any "-----BEGIN ... PRIVATE KEY-----").
StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path,
                              const std::string& kind) {
  if (path.empty()) return Status::InvalidArgument(flag + " is required (a PEM file)");
  StatusOr<std::string> text = ReadSmallFile(path, kMaxPemBytes, flag + " " + path);
  if (!text.ok()) return Status::InvalidArgument(text.status().message());
  std::string pem = std::move(*text);
  const size_t begin = pem.find("-----BEGIN ");
  const size_t end = begin == std::string::npos ? begin : pem.find("-----", begin + 11);
  if (begin == std::string::npos || end == std::string::npos ||
      pem.substr(begin, end - begin).find(kind) == std::string::npos) {
    return Status::InvalidArgument(flag + " " + path + ": no PEM \"" + kind +
                                   "\" block (expected \"-----BEGIN " + kind + "-----\")");
  }
  return pem;
}

}  // namespace

StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const ServerTls& tls) {
  if (tls.insecure) return grpc::InsecureServerCredentials();
  StatusOr<std::string> cert = ReadPem("--tls-cert", tls.cert, "CERTIFICATE");
  if (!cert.ok()) return cert.status();
  StatusOr<std::string> key = ReadPem("--tls-key", tls.key, "PRIVATE KEY");
  if (!key.ok()) return key.status();
  StatusOr<std::string> worker_ca = ReadPem("--worker-ca", tls.worker_ca, "CERTIFICATE");
  if (!worker_ca.ok()) return worker_ca.status();
  // Clients of the API present no certificate (they hold tokens); workers
  // must present one the worker CA signed — which the worker link checks
  // (PeerHasVerifiedCertificate). Any certificate presented is verified.
  grpc::SslServerCredentialsOptions options(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = *worker_ca;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(options);
}

StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const ClientTls& tls) {
  if (tls.insecure) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  if (!tls.ca.empty()) {
    StatusOr<std::string> ca = ReadPem(tls.ca_flag, tls.ca, "CERTIFICATE");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
  }
  if (tls.cert.empty() != tls.key.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key go together: give both or neither");
  }
  if (!tls.cert.empty()) {
    StatusOr<std::string> cert = ReadPem("--tls-cert", tls.cert, "CERTIFICATE");
    if (!cert.ok()) return cert.status();
    StatusOr<std::string> key = ReadPem("--tls-key", tls.key, "PRIVATE KEY");
    if (!key.ok()) return key.status();
    options.pem_cert_chain = *cert;
    options.pem_private_key = *key;
  }
  return grpc::SslCredentials(options);
}

grpc::ChannelArguments TlsChannelArguments(const ClientTls& tls) {
  grpc::ChannelArguments args;
  if (!tls.insecure && !tls.server_name.empty()) {
    args.SetSslTargetNameOverride(tls.server_name);
  }
  return args;
}

bool PeerHasVerifiedCertificate(const grpc::ServerContextBase& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr) return false;
  const std::vector<grpc::string_ref> security =
      auth->FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME);
  if (security.empty() || std::string(security.front().data(), security.front().size()) !=
                              GRPC_SSL_TRANSPORT_SECURITY_TYPE) {
    return false;
  }
  // Set by the TLS handshake only for a certificate it verified (the server
  // verifies every certificate presented).
  return !auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME).empty();
}

std::string PeerCertificateName(const grpc::ServerContextBase& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr) return "";
  const std::vector<grpc::string_ref> names = auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME);
  return names.empty() ? "" : std::string(names.front().data(), names.front().size());
}

}  // namespace accumulus
