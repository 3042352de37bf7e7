#include "common/data/idx_array.h"

#include <cstdio>
#include <optional>

#include "common/data/file_signature.h"

namespace accumulus::data {
namespace {

std::optional<ElementType> TypeOf(uint8_t type_byte) {
  switch (type_byte) {
    case 0x08:
      return ElementType::kUint8;
    case 0x09:
      return ElementType::kInt8;
    case 0x0B:
      return ElementType::kInt16;
    case 0x0C:
      return ElementType::kInt32;
    case 0x0D:
      return ElementType::kFloat32;
    case 0x0E:
      return ElementType::kFloat64;
    default:
      return std::nullopt;
  }
}

}  // namespace

StatusOr<NumericArray> ParseIdx(const std::string& field, const std::string& path,
                                std::string_view bytes) {
  auto fail = [&](size_t offset, const std::string& expected) {
    return ArrayError(field, path, offset, expected);
  };
  if (const std::string hint = FileSignatureHint(bytes); !hint.empty()) {
    return fail(0, "two zero bytes (the IDX magic number); " + hint);
  }
  if (bytes.size() < 4) return fail(bytes.size(), "a 4-byte IDX magic number");
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  if (b[0] != 0 || b[1] != 0) return fail(0, "two zero bytes (the IDX magic number)");
  const std::optional<ElementType> type = TypeOf(b[2]);
  if (!type) {
    char found[8];
    std::snprintf(found, sizeof found, "0x%02x", b[2]);
    return fail(2, std::string("an IDX type: 0x08 (unsigned byte), 0x09 (signed byte), 0x0b "
                               "(int16), 0x0c (int32), 0x0d (float32) or 0x0e (float64); found ") +
                       found);
  }
  NumericArray array;
  array.type = *type;
  array.big_endian = true;
  const int rank = b[3];
  if (rank < 1) return fail(3, "at least one dimension");
  size_t offset = 4;
  int64_t count = 1;
  for (int d = 0; d < rank; ++d, offset += 4) {
    if (bytes.size() < offset + 4) return fail(offset, "dimension " + std::to_string(d) + " size");
    const int64_t size = (int64_t{b[offset]} << 24) | (int64_t{b[offset + 1]} << 16) |
                         (int64_t{b[offset + 2]} << 8) | int64_t{b[offset + 3]};
    array.dims.push_back(size);
    // Named at the dimension that overflows.
    if (__builtin_mul_overflow(count, size, &count)) {
      return fail(offset, "dimensions whose product fits a file");
    }
  }
  if (Status s = PlaceData(field, path, bytes, offset - 4, offset, &array); !s.ok()) return s;
  return array;
}

}  // namespace accumulus::data
