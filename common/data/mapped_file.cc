#include "common/data/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace accumulus::data {
namespace {

std::string Why(int error) { return std::string(" (") + std::strerror(error) + ")"; }

}  // namespace

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& field,
                                                       const std::string& path) {
  if (path.empty()) return Status::InvalidArgument(field + " is required");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound(field + " " + path + ": cannot open" + Why(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    return Status::NotFound(field + " " + path + ": cannot read its size" + Why(error));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument(field + " " + path + ": not a regular file");
  }
  const auto size = static_cast<size_t>(st.st_size);
  void* data = nullptr;
  if (size > 0) {
    data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      const int error = errno;
      ::close(fd);
      return Status::Internal(field + " " + path + ": cannot map " + std::to_string(size) +
                              " bytes" + Why(error));
    }
  }
  // The mapping holds the file; the descriptor is no longer needed.
  ::close(fd);
  return std::unique_ptr<MappedFile>(new MappedFile(data, size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace accumulus::data
