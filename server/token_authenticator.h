// Checks the bearer token of every call on the controller's TLS port, before
// any service sees the call (a gRPC AuthMetadataProcessor): a malformed
// `authorization` header, more than one, or an unknown token ends the call
// UNAUTHENTICATED. A call without a token passes: the health service and the
// worker link (whose peers are identified by their certificates) need none,
// and the client API refuses it (AccessPolicy).
//
// It marks nothing in the AuthContext: gRPC hands the processor the
// connection's AuthContext, shared by every call on the connection (gRPC
// 1.51's server auth filter), so a property added there would be seen by
// the connection's other calls — another client's identity behind one
// proxy — and written concurrently by them (a data race that crashed the
// controller under 1,000 watchers). AccessPolicy names each call's caller
// from its own header instead. This class never logs or returns a token.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/auth_metadata_processor.h>

#include <memory>

#include "common/metrics/registry.h"
#include "server/token_table.h"

namespace accumulus::server {

class TokenAuthenticator final : public grpc::AuthMetadataProcessor {
 public:
  // `refused` counts calls ended here (label code: unauthenticated).
  TokenAuthenticator(std::shared_ptr<const TokenTable> tokens,
                     metrics::Family<metrics::Counter>* refused);

  // A hash and a map lookup: cheap enough for gRPC's own thread.
  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  const std::shared_ptr<const TokenTable> tokens_;
  metrics::Counter* const refused_;
};

}  // namespace accumulus::server
