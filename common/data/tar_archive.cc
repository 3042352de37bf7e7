#include "common/data/tar_archive.h"

#include <limits>
#include <optional>

#include "common/data/shown_name.h"

namespace accumulus::data {
namespace {

constexpr size_t kBlock = 512;
// Where the fields of a header lie (POSIX.1-2001 ustar, with GNU's use).
constexpr size_t kNameAt = 0, kNameSize = 100;
constexpr size_t kSizeAt = 124, kSizeSize = 12;
constexpr size_t kChecksumAt = 148, kChecksumSize = 8;
constexpr size_t kTypeAt = 156;
constexpr size_t kMagicAt = 257;
constexpr size_t kPrefixAt = 345, kPrefixSize = 155;

// A field's text: up to its first NUL.
std::string_view Text(std::string_view header, size_t at, size_t size) {
  std::string_view field = header.substr(at, size);
  return field.substr(0, field.find('\0'));
}

// A numeric field: octal digits between spaces or NULs, or GNU's base-256
// (the first byte's high bit set; the rest big-endian). Nothing for what
// is neither, or too large.
std::optional<uint64_t> Number(std::string_view header, size_t at, size_t size) {
  const std::string_view field = header.substr(at, size);
  uint64_t value = 0;
  if (static_cast<unsigned char>(field[0]) & 0x80) {
    if (static_cast<unsigned char>(field[0]) != 0x80) return std::nullopt;  // negative, or huge
    for (size_t i = 1; i < field.size(); ++i) {
      if (value >> 55 != 0) return std::nullopt;
      value = value << 8 | static_cast<unsigned char>(field[i]);
    }
    return value;
  }
  size_t i = 0;
  while (i < field.size() && field[i] == ' ') ++i;
  const size_t first = i;
  for (; i < field.size() && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (value >> 60 != 0) return std::nullopt;
    value = value << 3 | static_cast<uint64_t>(field[i] - '0');
  }
  if (i == first) return std::nullopt;
  for (; i < field.size(); ++i) {
    if (field[i] != ' ' && field[i] != '\0') return std::nullopt;
  }
  return value;
}

// Whether the header's checksum matches: the sum of its bytes with the
// checksum field taken as spaces, unsigned (POSIX) or signed (old tars).
bool ChecksumMatches(std::string_view header) {
  const std::optional<uint64_t> recorded = Number(header, kChecksumAt, kChecksumSize);
  if (!recorded) return false;
  int64_t unsigned_sum = 0, signed_sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    const bool in_field = i >= kChecksumAt && i < kChecksumAt + kChecksumSize;
    unsigned_sum += in_field ? ' ' : static_cast<unsigned char>(header[i]);
    signed_sum += in_field ? ' ' : static_cast<signed char>(header[i]);
  }
  return static_cast<int64_t>(*recorded) == unsigned_sum ||
         static_cast<int64_t>(*recorded) == signed_sum;
}

bool IsPosixUstar(std::string_view header) {
  return header.substr(kMagicAt, 6) == std::string_view("ustar\0", 6);
}
bool IsGnu(std::string_view header) {
  return header.substr(kMagicAt, 8) == std::string_view("ustar  \0", 8);
}

// What a pax or GNU header says of the member after it.
struct NextMember {
  bool named = false;
  std::string name;
  bool sized = false;
  uint64_t size = 0;
};

// What a pax extended header says of the next member: "LENGTH KEY=VALUE\n"
// records. False where a record is malformed.
bool ReadPax(std::string_view records, NextMember* next) {
  while (!records.empty()) {
    size_t length = 0, i = 0;
    for (; i < records.size() && records[i] >= '0' && records[i] <= '9' && i < 12; ++i) {
      length = length * 10 + static_cast<size_t>(records[i] - '0');
    }
    if (i == 0 || i >= records.size() || records[i] != ' ' || length <= i + 1 ||
        length > records.size() || records[length - 1] != '\n') {
      return false;
    }
    const std::string_view record = records.substr(i + 1, length - i - 2);
    records.remove_prefix(length);
    const size_t equals = record.find('=');
    if (equals == std::string_view::npos) return false;
    const std::string_view key = record.substr(0, equals), value = record.substr(equals + 1);
    if (key == "path") {
      next->named = true;
      next->name = std::string(value);
    }
    if (key == "size") {
      uint64_t n = 0;
      for (char c : value) {
        if (c < '0' || c > '9' || n > std::numeric_limits<uint64_t>::max() / 10 - 9) return false;
        n = n * 10 + static_cast<uint64_t>(c - '0');
      }
      if (value.empty()) return false;
      next->sized = true;
      next->size = n;
    }
  }
  return true;
}

}  // namespace

bool TarMember::IsAside() const {
  if (!name.empty() && name.back() == '/') return true;  // a directory, as old tars mark one
  const size_t slash = name.rfind('/');
  return name.compare(slash == std::string::npos ? 0 : slash + 1, 2, "._") == 0;
}

std::string TarMember::ShownName() const { return data::ShownName(name); }

bool TarArchive::Is(std::string_view bytes) {
  return bytes.size() >= kBlock && (IsPosixUstar(bytes) || IsGnu(bytes)) &&
         ChecksumMatches(bytes.substr(0, kBlock));
}

StatusOr<TarArchive> TarArchive::Parse(const std::string& field, const std::string& name,
                                       std::string_view bytes) {
  const auto error = [&](uint64_t at, const std::string& what) {
    return Status::InvalidArgument(field + " " + name + ": at byte " + std::to_string(at) + ": " +
                                   what);
  };
  TarArchive archive(bytes);
  NextMember next;
  uint64_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < kBlock) {
      return error(at, "expected a tar header of 512 bytes: the archive is cut short");
    }
    const std::string_view header = bytes.substr(at, kBlock);
    if (header.find_first_not_of('\0') == std::string_view::npos) break;  // the end
    if (!ChecksumMatches(header)) {
      return error(at, "a tar header whose checksum does not match: the archive is damaged");
    }
    const std::optional<uint64_t> recorded = Number(header, kSizeAt, kSizeSize);
    if (!recorded) return error(at + kSizeAt, "expected the member's size in octal");
    const char type = header[kTypeAt];
    // A pax size is the member's after it, not another header's.
    const bool describes_next = type == 'x' || type == 'L' || type == 'g' || type == 'K';
    const uint64_t size = next.sized && !describes_next ? next.size : *recorded;
    const uint64_t data = at + kBlock;
    if (size > bytes.size() - data) {
      return error(at, "a member of " + std::to_string(size) +
                           " bytes runs past the end of the archive: it is cut short");
    }
    const std::string_view content = bytes.substr(data, size);
    if (type == 'x') {  // pax: of the next member
      if (!ReadPax(content, &next)) {
        return error(data, "a pax extended header that is malformed");
      }
    } else if (type == 'L') {  // GNU: the next member's long name
      next.named = true;
      next.name = std::string(content.substr(0, content.find('\0')));
    } else if (type == 'g' || type == 'K') {
      // pax global header, GNU long link name: nothing a member's data needs.
    } else {
      if (type == '0' || type == '\0' || type == '7') {  // a regular file
        TarMember member;
        if (next.named) {
          member.name = next.name;
        } else {
          const std::string_view prefix =
              IsPosixUstar(header) ? Text(header, kPrefixAt, kPrefixSize) : "";
          member.name = (prefix.empty() ? "" : std::string(prefix) + "/") +
                        std::string(Text(header, kNameAt, kNameSize));
        }
        member.offset = data;
        member.size = size;
        archive.members_.push_back(std::move(member));
      }
      next = NextMember();
    }
    at = data + (size + kBlock - 1) / kBlock * kBlock;
  }
  return archive;
}

}  // namespace accumulus::data
