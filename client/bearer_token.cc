#include "client/bearer_token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "common/small_file.h"

namespace accumulus::client {
namespace {

// Writes all of `text` to `fd`; false on an error (errno says which).
bool WriteAll(int fd, const std::string& text) {
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<size_t>(n);
  }
  return true;
}

Status WriteFile(const std::string& path, const std::string& text, int flags, const char* what) {
  const int fd = ::open(path.c_str(), flags | O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return Status::FailedPrecondition(std::string(what) + " " + path + ": " + std::strerror(errno));
  const bool ok = WriteAll(fd, text) && ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  if (!ok) {
    return Status::FailedPrecondition(std::string(what) + " " + path + ": " + std::strerror(error));
  }
  return Status::Ok();
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

StatusOr<std::string> IssueToken(const std::string& tokens_file, const std::string& name,
                                 Role role) {
  if (Status s = ValidateTokenName(name); !s.ok()) return s;
  StatusOr<std::string> token = NewToken();
  if (!token.ok()) return token.status();
  const TokenEntry entry{name, role, TokenHash(*token)};
  // One write of one line with O_APPEND: two issuers at once cannot
  // interleave their lines.
  if (Status s = WriteFile(tokens_file, TokenFileLine(entry), O_APPEND, "tokens file"); !s.ok()) {
    return s;
  }
  return token;
}

Status WriteTokenFile(const std::string& path, const std::string& token) {
  return WriteFile(path, token + "\n", O_TRUNC, "token file");
}

// One token of some dozens of bytes; a kilobyte is some other file.
constexpr size_t kMaxTokenFileBytes = 1024;

StatusOr<std::string> ReadTokenFile(const std::string& path) {
  StatusOr<std::string> content = ReadSmallFile(path, kMaxTokenFileBytes, "token file " + path);
  if (!content.ok()) return content.status();
  std::string text = std::move(*content);
  size_t begin = 0, end = text.size();
  while (begin < end && IsSpace(text[begin])) ++begin;
  while (end > begin && IsSpace(text[end - 1])) --end;
  text = text.substr(begin, end - begin);
  if (text.empty()) return Status::InvalidArgument("token file " + path + " is empty");
  for (size_t i = 0; i < text.size(); ++i) {
    if (IsSpace(text[i]) || static_cast<unsigned char>(text[i]) < 0x21 ||
        static_cast<unsigned char>(text[i]) > 0x7e) {
      return Status::InvalidArgument("token file " + path + ": byte " +
                                     std::to_string(begin + i + 1) +
                                     " is a space or not printable ASCII; the file holds one "
                                     "token and nothing else");
    }
  }
  return text;
}

StatusOr<std::string> ResolveToken(const std::string& flag_token, const std::string& flag_file) {
  if (!flag_token.empty() && !flag_file.empty()) {
    return Status::InvalidArgument("give --token or --token-file, not both");
  }
  if (!flag_token.empty()) return flag_token;
  if (!flag_file.empty()) return ReadTokenFile(flag_file);
  const char* env_token = std::getenv("ACCUMULUS_TOKEN");
  if (env_token != nullptr && *env_token != '\0') return std::string(env_token);
  const char* env_file = std::getenv("ACCUMULUS_TOKEN_FILE");
  if (env_file != nullptr && *env_file != '\0') return ReadTokenFile(env_file);
  return std::string();
}

}  // namespace accumulus::client
