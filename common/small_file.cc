#include "common/small_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace accumulus {
namespace {

// The rest of the open file `fd`, at most `max_bytes`.
StatusOr<std::string> ReadOpenFile(int fd, size_t max_bytes, const std::string& label) {
  struct stat info {};
  if (fstat(fd, &info) == 0 && S_ISDIR(info.st_mode)) {
    return Status::InvalidArgument(label + ": is a directory, not a file");
  }
  std::string bytes;
  char buffer[65536];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return Status::InvalidArgument(label + ": cannot be read (" + std::strerror(errno) + ")");
    if (n == 0) return bytes;
    bytes.append(buffer, static_cast<size_t>(n));
    if (bytes.size() > max_bytes) {
      return Status::InvalidArgument(label + ": larger than " + std::to_string(max_bytes) +
                                     " bytes; is it the right file?");
    }
  }
}

}  // namespace

StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes,
                                    const std::string& label) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    const std::string reason =
        label + ": cannot be read (" + (path.empty() ? "no path" : std::strerror(error)) + ")";
    return error == ENOENT || error == ENOTDIR ? Status::NotFound(reason)
                                               : Status::InvalidArgument(reason);
  }
  StatusOr<std::string> bytes = ReadOpenFile(fd, max_bytes, label);
  close(fd);
  return bytes;
}

}  // namespace accumulus
