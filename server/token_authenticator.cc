#include "server/token_authenticator.h"

namespace accumulus::server {

TokenAuthenticator::TokenAuthenticator(std::shared_ptr<const TokenTable> tokens,
                                       metrics::Family<metrics::Counter>* refused)
    : tokens_(std::move(tokens)), refused_(refused->WithLabels({"unauthenticated"})) {}

grpc::Status TokenAuthenticator::Process(const InputMetadata& auth_metadata, grpc::AuthContext*,
                                         OutputMetadata*, OutputMetadata*) {
  const TokenTable::Headers headers = TokenTable::FindHeaders(auth_metadata);
  if (headers.count == 0) return grpc::Status::OK;  // no token: see the header
  if (headers.count > 1) {
    refused_->Increment();
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "more than one authorization header; send one bearer token");
  }
  // Hashed again by AccessPolicy for the call's caller (a microsecond): the
  // processor has no per-call place to leave what it found (see the header).
  const StatusOr<TokenEntry> entry = tokens_->Lookup(headers.first);
  if (!entry.ok()) {
    refused_->Increment();
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, entry.status().message());
  }
  return grpc::Status::OK;
}

}  // namespace accumulus::server
