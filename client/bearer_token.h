// The CLI's side of bearer tokens: issuing one into a controller's tokens
// file (`accumulus tokens add`, `accumulus up`), and finding the one to send
// (--token, --token-file, ACCUMULUS_TOKEN, ACCUMULUS_TOKEN_FILE). A token is
// never printed except once, when issued, and never put into an error.
#pragma once

#include <string>

#include "common/access_token.h"
#include "common/status.h"

namespace accumulus::client {

// A new token for `name` with `role`: its hash appended to `tokens_file`
// (created, mode 0600, if missing). Returns the token itself.
StatusOr<std::string> IssueToken(const std::string& tokens_file, const std::string& name,
                                 Role role);

// Writes `token` to `path` (mode 0600, replacing it): the file a client's
// --token-file names.
Status WriteTokenFile(const std::string& path, const std::string& token);

// The token in the file at `path`: its one line, surrounding whitespace
// removed. The error names the file and what is wrong, never its content.
StatusOr<std::string> ReadTokenFile(const std::string& path);

// The token to send: `flag_token` (--token), else the file `flag_file`
// (--token-file), else $ACCUMULUS_TOKEN, else the file $ACCUMULUS_TOKEN_FILE;
// "" when none is given. Both flags at once: INVALID_ARGUMENT.
StatusOr<std::string> ResolveToken(const std::string& flag_token, const std::string& flag_file);

}  // namespace accumulus::client
