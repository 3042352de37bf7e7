// Transport security of the controller's port: TLS for everyone who dials
// it, and on the worker link mutual TLS (a worker presents a client
// certificate signed by the cluster's worker CA). Plaintext only when asked
// for (`--insecure`). The files are PEM, read once at start; an error names
// the flag, the file and what is wrong with it, never its content.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace accumulus {

struct ServerTls {
  bool insecure = false;
  std::string cert;  // the controller's certificate chain (--tls-cert)
  std::string key;   // its private key (--tls-key)
  // The CA that signs the workers' client certificates (--worker-ca): a
  // peer presenting a certificate it did not sign is refused in the
  // handshake; one presenting none may call the client API only.
  std::string worker_ca;
};

struct ClientTls {
  bool insecure = false;
  // The CA that signed the controller's certificate (empty: the system's
  // roots), and the flag that gave it, for errors.
  std::string ca;
  std::string ca_flag = "--tls-ca";
  // A client certificate and its key (a worker's), or neither.
  std::string cert;
  std::string key;
  // The name to check the controller's certificate against, when not the
  // host dialled (a pod dialling an IP, a tunnel).
  std::string server_name;
};

StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const ServerTls& tls);
StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const ClientTls& tls);
// Channel arguments `tls` needs (the server name override).
grpc::ChannelArguments TlsChannelArguments(const ClientTls& tls);

// Whether the peer of a call presented a client certificate that the
// server's worker CA verified (always false over plaintext).
bool PeerHasVerifiedCertificate(const grpc::ServerContextBase& context);
// The common name of that certificate ("" without one), for logs.
std::string PeerCertificateName(const grpc::ServerContextBase& context);

}  // namespace accumulus
