#include "common/data/idx_array.h"

#include <algorithm>
#include <cstdio>

#include "common/data/class_labels.h"

namespace accumulus::data {

StatusOr<IdxArray> ParseIdx(const std::string& field, const std::string& path,
                            const std::string& bytes) {
  auto fail = [&](size_t offset, const std::string& expected) {
    return Status::InvalidArgument(field + " " + path + ": at byte " + std::to_string(offset) +
                                   ": expected " + expected);
  };
  if (bytes.size() < 4) return fail(bytes.size(), "a 4-byte IDX magic number");
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  if (b[0] != 0 || b[1] != 0) return fail(0, "two zero bytes (the IDX magic number)");
  if (b[2] != 0x08) {
    char found[8];
    std::snprintf(found, sizeof found, "0x%02x", b[2]);
    return fail(2, std::string("type 0x08 (unsigned byte), found ") + found);
  }
  const int rank = b[3];
  if (rank < 1) return fail(3, "at least one dimension");
  IdxArray array;
  size_t offset = 4;
  int64_t count = 1;
  for (int d = 0; d < rank; ++d, offset += 4) {
    if (bytes.size() < offset + 4) return fail(offset, "dimension " + std::to_string(d) + " size");
    const int64_t size = (int64_t{b[offset]} << 24) | (int64_t{b[offset + 1]} << 16) |
                         (int64_t{b[offset + 2]} << 8) | int64_t{b[offset + 3]};
    array.dims.push_back(size);
    // Dimensions whose product no file could hold: said as such, not
    // overflowed.
    if (__builtin_mul_overflow(count, size, &count)) {
      return fail(offset, "dimensions whose product fits a file");
    }
  }
  if (static_cast<uint64_t>(bytes.size() - offset) != static_cast<uint64_t>(count)) {
    return fail(offset, std::to_string(count) + " data bytes for dimensions of the header, found " +
                            std::to_string(bytes.size() - offset));
  }
  array.data_offset = offset;
  array.data = b + offset;
  array.count = count;
  return array;
}

StatusOr<int64_t> CheckIdxLabels(const IdxArray& labels, int64_t samples,
                                 const std::string& labels_path, const std::string& samples_path,
                                 int64_t declared_classes) {
  if (labels.dims.size() != 1 || labels.dims[0] != samples) {
    return Status::InvalidArgument(
        "data.labels_path " + labels_path + ": expected " + std::to_string(samples) +
        " labels in one dimension (one per sample of " + samples_path + ")");
  }
  int64_t classes = 0;
  for (int64_t i = 0; i < samples; ++i) {
    const int64_t y = labels.data[i];
    if (y >= ClassLimit(declared_classes)) {
      return Status::InvalidArgument("data.labels_path " + labels_path + ": at byte " +
                                     std::to_string(labels.data_offset + static_cast<size_t>(i)) +
                                     ": expected " + ExpectedClass(declared_classes));
    }
    classes = std::max(classes, y + 1);
  }
  return std::max(classes, declared_classes);
}

}  // namespace accumulus::data
