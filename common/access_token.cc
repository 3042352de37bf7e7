#include "common/access_token.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <set>
#include <sstream>

#include "common/small_file.h"

namespace accumulus {
namespace {

constexpr std::string_view kHashPrefix = "sha256:";
constexpr size_t kHexDigits = 64;
constexpr size_t kMaxNameLength = 64;

std::string Hex(const unsigned char* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0xf];
  }
  return out;
}

bool IsHashField(std::string_view field) {
  if (field.substr(0, kHashPrefix.size()) != kHashPrefix) return false;
  const std::string_view hex = field.substr(kHashPrefix.size());
  if (hex.size() != kHexDigits) return false;
  for (char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kViewer:
      return "viewer";
    case Role::kSubmitter:
      return "submitter";
    case Role::kAdmin:
      return "admin";
  }
  return "unknown";
}

std::optional<Role> ParseRole(std::string_view name) {
  for (Role role : {Role::kViewer, Role::kSubmitter, Role::kAdmin}) {
    if (RoleName(role) == name) return role;
  }
  return std::nullopt;
}

std::string RoleNames() { return "viewer, submitter, admin"; }

StatusOr<std::string> NewToken() {
  std::array<unsigned char, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    return Status::Internal("the system's random number generator failed");
  }
  return "acc_" + Hex(bytes.data(), bytes.size());
}

std::string TokenHash(std::string_view token) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  EVP_Digest(token.data(), token.size(), digest.data(), &size, EVP_sha256(), nullptr);
  return std::string(kHashPrefix) + Hex(digest.data(), size);
}

Status ValidateTokenName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) {
    return Status::InvalidArgument("a token's name has 1 to " + std::to_string(kMaxNameLength) +
                                   " characters, not " + std::to_string(name.size()));
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '@' || c == '-';
    if (!ok) {
      return Status::InvalidArgument("a token's name is made of letters, digits and . _ @ -");
    }
  }
  return Status::Ok();
}

std::string TokenFileLine(const TokenEntry& entry) {
  return entry.name + " " + std::string(RoleName(entry.role)) + " " + entry.hash + "\n";
}

// A line per token, ~100 bytes: a million tokens fit.
constexpr size_t kMaxTokensFileBytes = size_t{128} << 20;

StatusOr<std::vector<TokenEntry>> ReadTokenFile(const std::string& path) {
  StatusOr<std::string> text = ReadSmallFile(path, kMaxTokensFileBytes, "tokens file " + path);
  if (!text.ok()) return text.status();
  std::istringstream in(*text);
  std::vector<TokenEntry> entries;
  std::set<std::string> hashes;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = "tokens file " + path + " line " + std::to_string(number) + ": ";
    std::istringstream fields(line);
    std::vector<std::string> field;
    for (std::string f; fields >> f;) field.push_back(std::move(f));
    if (field.empty() || field[0][0] == '#') continue;
    if (field.size() != 3) {
      return Status::InvalidArgument(where + "expected NAME ROLE sha256:HEX (3 fields), found " +
                                     std::to_string(field.size()));
    }
    TokenEntry entry;
    if (Status s = ValidateTokenName(field[0]); !s.ok()) {
      return Status::InvalidArgument(where + "field 1: " + s.message());
    }
    entry.name = field[0];
    const std::optional<Role> role = ParseRole(field[1]);
    if (!role) {
      return Status::InvalidArgument(where + "field 2 is not a role; one of " + RoleNames());
    }
    entry.role = *role;
    if (!IsHashField(field[2])) {
      return Status::InvalidArgument(
          where +
          "field 3 is not sha256: and 64 lowercase hex digits (the file holds hashes, never "
          "tokens: accumulus tokens add writes such a line)");
    }
    entry.hash = field[2];
    if (!hashes.insert(entry.hash).second) {
      return Status::InvalidArgument(where + "the same token hash is listed on an earlier line");
    }
    entries.push_back(std::move(entry));
  }
  if (in.bad()) return Status::NotFound("tokens file " + path + ": read error");
  return entries;
}

}  // namespace accumulus
