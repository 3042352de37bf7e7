#include "common/data/zip_archive.h"

#include <zlib.h>

#include <algorithm>
#include <optional>

#include "common/data/little_endian.h"
#include "common/data/numeric_array.h"
#include "common/data/shown_name.h"
#include "common/data/stream_decoder.h"

namespace accumulus::data {
namespace {

using namespace std::string_view_literals;

constexpr std::string_view kLocalHeader = "PK\x03\x04"sv;
constexpr std::string_view kCentralHeader = "PK\x01\x02"sv;
constexpr std::string_view kEndRecord = "PK\x05\x06"sv;
constexpr std::string_view kZip64EndRecord = "PK\x06\x06"sv;
constexpr std::string_view kZip64Locator = "PK\x06\x07"sv;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kEndRecordSize = 22;
constexpr size_t kZip64EndRecordSize = 56;
constexpr size_t kZip64LocatorSize = 20;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint32_t kZip64Marker = 0xFFFFFFFF;
// DEFLATE cannot hold more than 1032 bytes per byte it takes (258 bytes per
// length code of a 2-bit symbol, at best): a larger recorded size is a lie.
constexpr uint64_t kMostDeflateRatio = 1032;

// The fields of a record whose size has been checked.
uint16_t Le16(std::string_view bytes, size_t at) {
  return static_cast<uint16_t>(LittleEndian(bytes, at, 2));
}
uint32_t Le32(std::string_view bytes, size_t at) {
  return static_cast<uint32_t>(LittleEndian(bytes, at, 4));
}
uint64_t Le64(std::string_view bytes, size_t at) { return LittleEndian(bytes, at, 8); }

// The end-of-central-directory record: the last one that its comment's
// length carries to the archive's end, or (an archive with trailing bytes)
// the last one at all.
std::optional<size_t> FindEndRecord(std::string_view bytes) {
  if (bytes.size() < kEndRecordSize) return std::nullopt;
  const size_t lowest =
      bytes.size() - kEndRecordSize - std::min<size_t>(bytes.size() - kEndRecordSize, 0xFFFF);
  std::optional<size_t> any;
  for (size_t at = bytes.size() - kEndRecordSize + 1; at-- > lowest;) {
    if (bytes.substr(at, 4) != kEndRecord) continue;
    if (at + kEndRecordSize + Le16(bytes, at + 20) == bytes.size()) return at;
    if (!any) any = at;
  }
  return any;
}

}  // namespace

bool ZipMember::IsAside() const {
  return (!name.empty() && name.back() == '/') || name.rfind("__MACOSX/", 0) == 0;
}

std::string ZipMember::ShownName() const { return data::ShownName(name); }

std::string ZipMember::MethodName() const {
  switch (method) {
    case kStored:
      return "stored";
    case kDeflated:
      return "deflated";
    case kBzip2:
      return "bzip2";
    case kLzma:
      return "LZMA";
    case kZstd:
      return "zstd";
    case kXz:
      return "xz";
    case 9:
      return "method 9 (Deflate64)";
    case 98:
      return "method 98 (PPMd)";
    default:
      return "method " + std::to_string(method);
  }
}

bool ZipArchive::Is(std::string_view bytes) {
  return bytes.substr(0, 4) == kLocalHeader || bytes.substr(0, 4) == kEndRecord;
}

StatusOr<ZipArchive> ZipArchive::Parse(const std::string& field, const std::string& path,
                                       std::string_view bytes) {
  auto fail = [&](size_t offset, const std::string& expected) {
    return ArrayError(field, path, offset, expected);
  };
  const std::optional<size_t> end = FindEndRecord(bytes);
  if (!end) {
    return fail(bytes.size(),
                "a zip archive's end record in its last 65557 bytes: the archive is cut short");
  }
  uint64_t disk = Le16(bytes, *end + 4);
  uint64_t directory_disk = Le16(bytes, *end + 6);
  uint64_t entries = Le16(bytes, *end + 10);
  uint64_t directory_size = Le32(bytes, *end + 12);
  uint64_t directory_offset = Le32(bytes, *end + 16);
  if (entries == 0xFFFF || directory_size == kZip64Marker || directory_offset == kZip64Marker) {
    if (*end < kZip64LocatorSize || bytes.substr(*end - kZip64LocatorSize, 4) != kZip64Locator) {
      return fail(*end,
                  "a zip64 end record locator before the end record, whose counts say "
                  "there is one");
    }
    const uint64_t record = Le64(bytes, *end - kZip64LocatorSize + 8);
    if (bytes.size() < kZip64EndRecordSize || record > bytes.size() - kZip64EndRecordSize ||
        bytes.substr(record, 4) != kZip64EndRecord) {
      return fail(*end - kZip64LocatorSize + 8, "the offset of the zip64 end record");
    }
    disk = Le32(bytes, record + 16);
    directory_disk = Le32(bytes, record + 20);
    entries = Le64(bytes, record + 32);
    directory_size = Le64(bytes, record + 40);
    directory_offset = Le64(bytes, record + 48);
  }
  if (disk != 0 || directory_disk != 0) {
    return Status::InvalidArgument(field + " " + path +
                                   ": one part of a zip archive spanning several files: join "
                                   "them into one archive first (zip -s 0)");
  }
  if (directory_offset > bytes.size() || directory_size > bytes.size() - directory_offset) {
    return fail(*end + 16, "a central directory within the file (the archive is cut short)");
  }
  ZipArchive archive(field, path, bytes);
  size_t at = directory_offset;
  const size_t directory_end = directory_offset + directory_size;
  // Each entry takes at least its fixed part: a count beyond that is a lie
  // (and no reason to reserve memory for it).
  if (entries > directory_size / kCentralHeaderSize) {
    return fail(*end + 10, "as many directory entries as the directory has room for");
  }
  archive.members_.reserve(entries);
  for (uint64_t i = 0; i < entries; ++i) {
    if (directory_end - at < kCentralHeaderSize || bytes.substr(at, 4) != kCentralHeader) {
      return fail(at,
                  "directory entry " + std::to_string(i + 1) + " of " + std::to_string(entries));
    }
    const size_t name_size = Le16(bytes, at + 28);
    const size_t extra_size = Le16(bytes, at + 30);
    const size_t comment_size = Le16(bytes, at + 32);
    if (directory_end - at - kCentralHeaderSize < name_size + extra_size + comment_size) {
      return fail(at + 28, "a name, extra field and comment within the directory");
    }
    ZipMember member;
    member.encrypted = (Le16(bytes, at + 8) & 1) != 0;
    member.method = Le16(bytes, at + 10);
    member.crc32 = Le32(bytes, at + 16);
    member.compressed_size = Le32(bytes, at + 20);
    member.size = Le32(bytes, at + 24);
    member.header_offset = Le32(bytes, at + 42);
    member.name = std::string(bytes.substr(at + kCentralHeaderSize, name_size));
    // The zip64 extra field holds, in this order, the sizes and the offset
    // whose 32-bit fields are full.
    std::string_view extra = bytes.substr(at + kCentralHeaderSize + name_size, extra_size);
    while (extra.size() >= 4) {
      const uint16_t id = Le16(extra, 0);
      const size_t size = std::min<size_t>(Le16(extra, 2), extra.size() - 4);
      if (id == kZip64ExtraId) {
        std::string_view values = extra.substr(4, size);
        for (uint64_t* value : {&member.size, &member.compressed_size, &member.header_offset}) {
          if (*value != kZip64Marker) continue;
          if (values.size() < 8) {
            return fail(at + kCentralHeaderSize + name_size,
                        "a zip64 extra field holding the sizes its entry leaves out");
          }
          *value = Le64(values, 0);
          values.remove_prefix(8);
        }
      }
      extra.remove_prefix(4 + size);
    }
    archive.members_.push_back(std::move(member));
    at += kCentralHeaderSize + name_size + extra_size + comment_size;
  }
  return archive;
}

Status ZipArchive::MemberError(const ZipMember& member, const std::string& what) const {
  return Status::InvalidArgument(field_ + " " + path_ + "[" + member.ShownName() + "]: " + what);
}

StatusOr<std::string_view> ZipArchive::DataOf(const ZipMember& member) const {
  if (member.encrypted) {
    return MemberError(member, "the member is encrypted: store it unencrypted");
  }
  switch (member.method) {
    case ZipMember::kStored:
    case ZipMember::kDeflated:
    case ZipMember::kBzip2:
    case ZipMember::kLzma:
    case ZipMember::kZstd:
    case ZipMember::kXz:
      break;
    default:
      return MemberError(member, "compressed with " + member.MethodName() +
                                     ", which is not read: store it, or deflate it (zip's "
                                     "default, numpy.savez_compressed's)");
  }
  const uint64_t at = member.header_offset;
  if (at > bytes_.size() || bytes_.size() - at < kLocalHeaderSize ||
      bytes_.substr(at, 4) != kLocalHeader) {
    return MemberError(member, "expected its local header at byte " + std::to_string(at));
  }
  const uint64_t data = at + kLocalHeaderSize + Le16(bytes_, at + 26) + Le16(bytes_, at + 28);
  if (data > bytes_.size() || bytes_.size() - data < member.compressed_size) {
    return MemberError(member, std::to_string(member.compressed_size) + " bytes from byte " +
                                   std::to_string(data) + " run past the end of the archive " +
                                   "(it is cut short)");
  }
  return bytes_.substr(data, member.compressed_size);
}

StatusOr<std::unique_ptr<StreamDecoder>> ZipArchive::DecoderOf(const ZipMember& member,
                                                               std::string_view* data,
                                                               size_t max_size) const {
  switch (member.method) {
    case ZipMember::kDeflated:
      return RawDeflateDecoder();
    case ZipMember::kBzip2:
      return Bzip2Decoder();
    case ZipMember::kZstd:
      return ZstdDecoder(max_size);
    case ZipMember::kXz:
      return XzDecoder(max_size);
    case ZipMember::kLzma: {
      StatusOr<std::unique_ptr<StreamDecoder>> decoder =
          ZipLzmaDecoder(data, member.size, max_size);
      if (!decoder.ok()) return MemberError(member, decoder.status().message());
      return decoder;
    }
    default:
      return MemberError(member, "compressed with " + member.MethodName());
  }
}

StatusOr<std::string_view> ZipArchive::Read(const ZipMember& member, size_t max_size,
                                            std::string* decompressed) const {
  StatusOr<std::string_view> data = DataOf(member);
  if (!data.ok()) return data.status();
  if (member.size > max_size) {
    return MemberError(member, "holds " + std::to_string(member.size) +
                                   " bytes, more than it may take of this machine's memory (" +
                                   std::to_string(max_size) +
                                   "): extract it, where it is read in place");
  }
  std::string_view content = *data;
  if (member.method == ZipMember::kStored && member.size != member.compressed_size) {
    return MemberError(member, "a stored member of " + std::to_string(member.compressed_size) +
                                   " bytes whose directory entry records " +
                                   std::to_string(member.size));
  }
  if (member.method == ZipMember::kDeflated &&
      member.size / kMostDeflateRatio > member.compressed_size) {
    return MemberError(member, "its directory entry records " + std::to_string(member.size) +
                                   " bytes, more than " + std::to_string(member.compressed_size) +
                                   " deflated bytes can hold");
  }
  if (member.method != ZipMember::kStored) {
    StatusOr<std::unique_ptr<StreamDecoder>> decoder = DecoderOf(member, &content, max_size);
    if (!decoder.ok()) return decoder.status();
    StatusOr<std::string> out =
        DecodeExactly(decoder->get(), member.MethodName(), content, member.size);
    if (!out.ok()) return MemberError(member, out.status().message());
    *decompressed = std::move(*out);
    content = *decompressed;
  }
  if (crc32_z(0, reinterpret_cast<const Bytef*>(content.data()), content.size()) != member.crc32) {
    return MemberError(member, "its content does not match its CRC-32: the archive is damaged");
  }
  return content;
}

StatusOr<std::string> ZipArchive::Peek(const ZipMember& member, size_t size,
                                       size_t memory_limit) const {
  StatusOr<std::string_view> data = DataOf(member);
  if (!data.ok()) return data.status();
  std::string_view content = *data;
  if (member.method == ZipMember::kStored) return std::string(content.substr(0, size));
  StatusOr<std::unique_ptr<StreamDecoder>> decoder = DecoderOf(member, &content, memory_limit);
  if (!decoder.ok()) return decoder.status();
  StatusOr<std::string> prefix = DecodePrefix(decoder->get(), member.MethodName(), content, size);
  if (!prefix.ok()) return MemberError(member, prefix.status().message());
  return prefix;
}

}  // namespace accumulus::data
