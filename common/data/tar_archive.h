// Tar archives as pandas reads them (.tar, and .tar.gz, .tar.bz2, .tar.xz
// once decompressed: common/data/compressed_file.h) and the tools write
// them: POSIX ustar and pax (Python's tarfile), GNU tar's long names and
// large sizes. Each header is checked against its checksum; members are
// views into the archive's bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace accumulus::data {

struct TarMember {
  std::string name;     // as the archive stores it, pax's or GNU's long name included
  uint64_t offset = 0;  // of its data in the archive
  uint64_t size = 0;

  // What macOS's tar adds beside each file ("._a.csv", its AppleDouble
  // metadata), or a directory that an old tar marks as a file ("data/"):
  // not data.
  bool IsAside() const;
  // The name for a message (common/data/shown_name.h).
  std::string ShownName() const;
};

class TarArchive {
 public:
  // Whether `bytes` begin with a tar header: ustar's magic, and a checksum
  // that matches.
  static bool Is(std::string_view bytes);

  // The archive's regular files (directories, links and the headers that
  // describe the next member are not listed), from `bytes`, which must
  // outlive it. INVALID_ARGUMENT "FIELD NAME: at byte N: ..." where a header
  // is damaged or the archive cut short; `name` is the archive's, as
  // messages show it.
  static StatusOr<TarArchive> Parse(const std::string& field, const std::string& name,
                                    std::string_view bytes);

  const std::vector<TarMember>& members() const { return members_; }
  std::string_view Read(const TarMember& member) const {
    return bytes_.substr(member.offset, member.size);
  }

 private:
  explicit TarArchive(std::string_view bytes) : bytes_(bytes) {}

  std::string_view bytes_;
  std::vector<TarMember> members_;
};

}  // namespace accumulus::data
