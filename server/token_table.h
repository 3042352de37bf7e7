// The controller's bearer tokens, by hash: who an `authorization` header
// names. Shared by the TokenAuthenticator (which refuses a bad header before
// any service sees the call) and the AccessPolicy (which names the caller of
// each call from the same header). Immutable once built, so both read it
// from any thread without a lock.
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/access_token.h"
#include "common/status.h"

namespace accumulus::server {

class TokenTable {
 public:
  inline static constexpr std::string_view kHeader = "authorization";

  explicit TokenTable(const std::vector<TokenEntry>& tokens);

  // A call's `authorization` headers: how many it sent, and the value of
  // the first (empty when none).
  struct Headers {
    size_t count = 0;
    std::string_view first;
  };
  static Headers FindHeaders(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);

  // The token of `header` ("Bearer <token>"); UNAUTHENTICATED, without
  // quoting it, when the header is malformed or the token unknown.
  StatusOr<TokenEntry> Lookup(std::string_view header) const;

 private:
  // By hash: the lookup compares hashes, so its timing tells nothing useful
  // about a registered token.
  std::unordered_map<std::string, TokenEntry> by_hash_;
};

}  // namespace accumulus::server
