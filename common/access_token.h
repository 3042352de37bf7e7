// Bearer tokens and the roles they carry. A token is a random secret a client
// sends with every call; the controller keeps only its SHA-256, in a tokens
// file (one line per token: `NAME ROLE sha256:HEX`), so the file — or the
// Kubernetes Secret it comes from — gives no one a usable token. Errors about
// that file name the file and the line and what was expected, never the
// line's content: a raw token pasted there by mistake must not reach a log.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace accumulus {

// Ordered: each role may do what the ones before it may.
enum class Role {
  kViewer = 1,     // get, list, watch, workers
  kSubmitter = 2,  // + submit; cancel and resume its own jobs
  kAdmin = 3,      // everything, on every job
};

std::string_view RoleName(Role role);
std::optional<Role> ParseRole(std::string_view name);
// "viewer, submitter, admin", for errors.
std::string RoleNames();

struct TokenEntry {
  std::string name;  // who the token identifies: a job's owner
  Role role = Role::kViewer;
  std::string hash;  // "sha256:" and 64 lowercase hex digits
};

// A new token: "acc_" and 64 hex digits from the system's CSPRNG.
StatusOr<std::string> NewToken();
// "sha256:<hex>" of `token`.
std::string TokenHash(std::string_view token);
// A name may own jobs and appear in logs: 1 to 64 of [A-Za-z0-9._@-].
Status ValidateTokenName(std::string_view name);

// The tokens file's line for `entry` (with its newline).
std::string TokenFileLine(const TokenEntry& entry);
// Every entry of the tokens file at `path`; blank lines and `#` comments are
// skipped. INVALID_ARGUMENT naming the file and line for a malformed line or
// a hash listed twice; NOT_FOUND when the file cannot be read.
StatusOr<std::vector<TokenEntry>> ReadTokenFile(const std::string& path);

}  // namespace accumulus
