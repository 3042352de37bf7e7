// Checks the bearer token of every call on the controller's TLS port, before
// any service sees the call (a gRPC AuthMetadataProcessor): a known token
// puts its name and role into the call's AuthContext, where AccessPolicy
// reads them; an unknown or malformed one ends the call UNAUTHENTICATED. A
// call without a token passes unmarked: the health service and the worker
// link (whose peers are identified by their certificates) need none, and the
// client API refuses it.
//
// The token is consumed here: no service, interceptor or log downstream ever
// sees it, and this class never logs or returns it.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/auth_metadata_processor.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "common/access_token.h"
#include "common/metrics/registry.h"

namespace accumulus::server {

// The AuthContext properties of an authenticated call.
inline constexpr char kPrincipalProperty[] = "accumulus.principal";
inline constexpr char kRoleProperty[] = "accumulus.role";

class TokenAuthenticator final : public grpc::AuthMetadataProcessor {
 public:
  // `refused` counts calls ended here (label code: unauthenticated).
  TokenAuthenticator(const std::vector<TokenEntry>& tokens,
                     metrics::Family<metrics::Counter>* refused);

  // A hash and a map lookup: cheap enough for gRPC's own thread.
  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  // By hash: the lookup compares hashes, so its timing tells nothing useful
  // about a registered token.
  std::unordered_map<std::string, TokenEntry> by_hash_;
  metrics::Counter* const refused_;
};

}  // namespace accumulus::server
