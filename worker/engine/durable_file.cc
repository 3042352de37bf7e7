#include "worker/engine/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace accumulus::engine {

namespace {

Status FileErrorCode(std::string message, int error) {
  switch (error) {
    case EACCES:
    case EPERM:
    case EROFS:
    case ENOENT:
    case ENOTDIR:
    case EISDIR:
    case ENAMETOOLONG:
    case ELOOP:
      return Status::FailedPrecondition(std::move(message));
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return Status::ResourceExhausted(std::move(message));
    default:
      return Status::Internal(std::move(message));
  }
}

}  // namespace

Status FileError(const std::string& what, int error) {
  return FileErrorCode(what + ": " + std::strerror(error), error).WithFault(Fault::kStorage);
}

Status WriteFileSynced(const std::string& temp, const std::string& data) {
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return FileError("cannot create " + temp, errno);
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      return FileError("cannot write " + temp, error);
    }
    written += static_cast<size_t>(n);
  }
  const int synced = ::fsync(fd) == 0 ? 0 : errno;
  const int closed = ::close(fd) == 0 ? 0 : errno;
  if (synced != 0 || closed != 0) {
    ::unlink(temp.c_str());
    return FileError("cannot flush " + temp, synced != 0 ? synced : closed);
  }
  return Status::Ok();
}

Status RenameDurably(const std::string& temp, const std::string& path) {
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    return FileError("cannot rename " + temp + " to " + path, error);
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  return Status::Ok();
}

Status ReplaceFileDurably(const std::string& path, const std::string& data,
                          const std::string& temp_suffix) {
  const std::string temp = path + temp_suffix;
  if (Status s = WriteFileSynced(temp, data); !s.ok()) return s;
  return RenameDurably(temp, path);
}

}  // namespace accumulus::engine
