// A data file mapped read-only into memory. Its pages are read in as they
// are touched and stay in the page cache, shared by every process reading
// the file: a trainer holds no private copy of a corpus, and starts without
// reading it whole.
//
// The file must not shrink while it is mapped (a read past its new end
// stops the process with SIGBUS, as with numpy.memmap); replace a data file
// by renaming a new one over it, which leaves the mapped one intact.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace accumulus::data {

class MappedFile {
 public:
  // INVALID_ARGUMENT when `path` is empty or not a regular file, NOT_FOUND
  // when it cannot be opened; each names `field` (the spec's field) and the
  // path.
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& field,
                                                    const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  MappedFile(void* data, size_t size) : data_(data), size_(size) {}

  void* data_;  // nullptr for an empty file, which cannot be mapped
  size_t size_;
};

}  // namespace accumulus::data
