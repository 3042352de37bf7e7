// Zip archives (PKWARE's APPNOTE) as numpy.savez and savez_compressed,
// Python's zipfile, pandas' to_csv(compression="zip") and the zip tools
// write them: the central directory, zip64 included, read in place; members
// stored, deflated, or compressed with bzip2, LZMA, zstd or xz (Python's
// zipfile writes each). Encrypted members, other compression methods and
// archives spanning several files are refused, by name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/data/stream_decoder.h"
#include "common/status.h"

namespace accumulus::data {

struct ZipMember {
  // The compression methods read (APPNOTE 4.4.5); others are refused on
  // reading.
  static constexpr uint16_t kStored = 0;
  static constexpr uint16_t kDeflated = 8;
  static constexpr uint16_t kBzip2 = 12;
  static constexpr uint16_t kLzma = 14;
  static constexpr uint16_t kZstd = 93;
  static constexpr uint16_t kXz = 95;

  std::string name;  // as the archive stores it ("x_train.npy", "dir/a.csv")
  uint16_t method = kStored;
  bool encrypted = false;
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;
  uint64_t header_offset = 0;  // of its local header

  // A directory, or what macOS's Finder adds beside each file
  // ("__MACOSX/._a.csv"): not data.
  bool IsAside() const;
  // The name for a message (common/data/shown_name.h).
  std::string ShownName() const;
  // How its data is held, for a message: "stored", "deflated", "bzip2"...
  // ("method 98 (PPMd)" for one not read).
  std::string MethodName() const;
};

class ZipArchive {
 public:
  // Whether `bytes` begin as a zip archive does (a local header, or the end
  // record of an empty archive).
  static bool Is(std::string_view bytes);

  // The archive's directory, from `bytes`, which must outlive it.
  // INVALID_ARGUMENT "FIELD PATH: ..." naming the byte where the directory
  // is damaged.
  static StatusOr<ZipArchive> Parse(const std::string& field, const std::string& path,
                                    std::string_view bytes);

  const std::vector<ZipMember>& members() const { return members_; }

  // The member's content, checked against its CRC-32: a view into the
  // archive where it is stored, else decompressed into `*decompressed`
  // (which must outlive the view). A member of more than `max_size` bytes is
  // refused. INVALID_ARGUMENT "FIELD PATH[NAME]: ..." where it cannot be
  // read.
  StatusOr<std::string_view> Read(const ZipMember& member, size_t max_size,
                                  std::string* decompressed) const;

  // Up to `size` of the member's first bytes, unchecked: a look at its
  // header. Decompressing them may take up to `memory_limit` bytes (a zstd
  // window, an xz dictionary).
  StatusOr<std::string> Peek(const ZipMember& member, size_t size, size_t memory_limit) const;

 private:
  ZipArchive(std::string field, std::string path, std::string_view bytes)
      : field_(std::move(field)), path_(std::move(path)), bytes_(bytes) {}

  // Where the member's data lies in the archive, past its local header.
  StatusOr<std::string_view> DataOf(const ZipMember& member) const;
  Status MemberError(const ZipMember& member, const std::string& what) const;
  // The decoder of a compressed member's `*data` (advanced past a header of
  // its own, where its method has one).
  StatusOr<std::unique_ptr<StreamDecoder>> DecoderOf(const ZipMember& member,
                                                     std::string_view* data, size_t max_size) const;

  std::string field_;
  std::string path_;
  std::string_view bytes_;
  std::vector<ZipMember> members_;
};

}  // namespace accumulus::data
