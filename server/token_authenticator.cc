#include "server/token_authenticator.h"

#include <string_view>

namespace accumulus::server {
namespace {

constexpr std::string_view kAuthorization = "authorization";
constexpr std::string_view kBearer = "Bearer ";

}  // namespace

TokenAuthenticator::TokenAuthenticator(const std::vector<TokenEntry>& tokens,
                                       metrics::Family<metrics::Counter>* refused)
    : refused_(refused->WithLabels({"unauthenticated"})) {
  for (const TokenEntry& entry : tokens) by_hash_.emplace(entry.hash, entry);
}

grpc::Status TokenAuthenticator::Process(const InputMetadata& auth_metadata,
                                         grpc::AuthContext* context,
                                         OutputMetadata* consumed_auth_metadata, OutputMetadata*) {
  const auto [first, last] =
      auth_metadata.equal_range(grpc::string_ref(kAuthorization.data(), kAuthorization.size()));
  if (first == last) return grpc::Status::OK;  // no token: see the header
  if (std::next(first) != last) {
    refused_->Increment();
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "more than one authorization header; send one bearer token");
  }
  const std::string_view value(first->second.data(), first->second.size());
  consumed_auth_metadata->emplace(std::string(kAuthorization), std::string(value));
  if (value.substr(0, kBearer.size()) != kBearer || value.size() == kBearer.size()) {
    refused_->Increment();
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "the authorization header is not \"Bearer <token>\"");
  }
  const auto entry = by_hash_.find(TokenHash(value.substr(kBearer.size())));
  if (entry == by_hash_.end()) {
    refused_->Increment();
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "unknown token: it is not in the controller's tokens file");
  }
  context->AddProperty(kPrincipalProperty, entry->second.name);
  context->AddProperty(kRoleProperty, std::string(RoleName(entry->second.role)));
  return grpc::Status::OK;
}

}  // namespace accumulus::server
