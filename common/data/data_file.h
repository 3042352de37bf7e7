// A data file's content as its reader parses it, whether the file holds it
// as it is or compressed, as pandas and numpy read them: the file itself,
// mapped (common/data/mapped_file.h); what a compressed file holds (gzip, as
// MNIST's .gz files; bzip2, xz, zstd: common/data/compressed_file.h); a
// member of a zip archive (a .csv.zip of one file, an array of
// numpy.savez's .npz) — read in place where it is stored, decompressed into
// memory where it is compressed; or the one file of a tar archive (.tar,
// .tar.gz as pandas reads them).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/data/mapped_file.h"
#include "common/status.h"

namespace accumulus::data {

// Which member of a zip archive to read, where the file is one.
struct MemberChoice {
  // The spec's field that names the member ("data.array"); "" where the
  // data kind has none, and an archive must then hold one file.
  std::string field;
  // The member as the field names it; "" for the archive's one file.
  std::string name;
  // An ending the name may leave off, as numpy.load's keys leave ".npy" off
  // the members' names.
  std::string implied_suffix;
  // What a member's first bytes say of it, for the list of an archive's
  // members when the name is missing or wrong ("uint8 (60000, 28, 28)"), or
  // ""; unset: the names alone.
  std::function<std::string(std::string_view head)> describe;
};

class DataFile {
 public:
  // INVALID_ARGUMENT (NOT_FOUND for a file that cannot be opened) naming
  // `field`, the path, and for an archive's member `choice.field` and the
  // member. A compressed file or member is decompressed into memory, at most
  // DecompressionBudget() bytes of it.
  static StatusOr<std::unique_ptr<DataFile>> Open(const std::string& field, const std::string& path,
                                                  const MemberChoice& choice = {});

  std::string_view bytes() const { return bytes_; }
  // The file as errors about its content name it: the path; with
  // " (decompressed)" where a byte offset is the decompressed data's; with
  // "[member]" for an archive's member.
  const std::string& name() const { return name_; }
  // How the content came out of the file, for the job's log ("gzip-
  // compressed, decompressed in memory: 47040016 bytes"); "" for a plain
  // file.
  const std::string& reading() const { return reading_; }

 private:
  DataFile() = default;
  // The steps of Open: each takes bytes_ to what it holds, or leaves it.
  Status TakeDecompressed(const std::string& field, const std::string& path);
  Status TakeZipMember(const std::string& field, const std::string& path,
                       const MemberChoice& choice);
  Status TakeTarMember(const std::string& field, const std::string& path);

  std::unique_ptr<MappedFile> mapped_;
  std::string decompressed_;
  std::string_view bytes_;  // into mapped_ or decompressed_
  std::string name_;
  std::string reading_;
};

// Half the memory this process may use (the machine's, or its container's
// limit where lower: common/cgroup_limits.h): the most a data file may
// decompress to.
size_t DecompressionBudget();

}  // namespace accumulus::data
