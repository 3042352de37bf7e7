#include "server/token_authenticator.h"

#include <iterator>
#include <string_view>

namespace accumulus::server {

TokenAuthenticator::TokenAuthenticator(std::shared_ptr<const TokenTable> tokens,
                                       metrics::Family<metrics::Counter>* refused)
    : tokens_(std::move(tokens)), refused_(refused->WithLabels({"unauthenticated"})) {}

grpc::Status TokenAuthenticator::Process(const InputMetadata& auth_metadata, grpc::AuthContext*,
                                         OutputMetadata*, OutputMetadata*) {
  const auto [first, last] = auth_metadata.equal_range(
      grpc::string_ref(TokenTable::kHeader.data(), TokenTable::kHeader.size()));
  if (first == last) return grpc::Status::OK;  // no token: see the header
  if (std::next(first) != last) {
    refused_->Increment();
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "more than one authorization header; send one bearer token");
  }
  const StatusOr<TokenEntry> entry =
      tokens_->Lookup(std::string_view(first->second.data(), first->second.size()));
  if (!entry.ok()) {
    refused_->Increment();
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, entry.status().message());
  }
  return grpc::Status::OK;
}

}  // namespace accumulus::server
