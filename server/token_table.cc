#include "server/token_table.h"

#include <iterator>

namespace accumulus::server {
namespace {

constexpr std::string_view kBearer = "Bearer ";

}  // namespace

TokenTable::TokenTable(const std::vector<TokenEntry>& tokens) {
  for (const TokenEntry& entry : tokens) by_hash_.emplace(entry.hash, entry);
}

TokenTable::Headers TokenTable::FindHeaders(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  const auto [first, last] = metadata.equal_range(grpc::string_ref(kHeader.data(), kHeader.size()));
  Headers headers;
  headers.count = static_cast<size_t>(std::distance(first, last));
  if (first != last) headers.first = std::string_view(first->second.data(), first->second.size());
  return headers;
}

StatusOr<TokenEntry> TokenTable::Lookup(std::string_view header) const {
  if (header.substr(0, kBearer.size()) != kBearer || header.size() == kBearer.size()) {
    return Status::Unauthenticated("the authorization header is not \"Bearer <token>\"");
  }
  const auto entry = by_hash_.find(TokenHash(header.substr(kBearer.size())));
  if (entry == by_hash_.end()) {
    return Status::Unauthenticated("unknown token: it is not in the controller's tokens file");
  }
  return entry->second;
}

}  // namespace accumulus::server
