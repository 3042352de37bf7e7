#include "common/data/idx_array.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "common/data/class_labels.h"

namespace accumulus::data {
namespace {

// Bytes per element, 0 for a type byte the format does not define.
size_t ElementSize(uint8_t type) {
  switch (static_cast<IdxType>(type)) {
    case IdxType::kUint8:
    case IdxType::kInt8:
      return 1;
    case IdxType::kInt16:
      return 2;
    case IdxType::kInt32:
    case IdxType::kFloat32:
      return 4;
    case IdxType::kFloat64:
      return 8;
  }
  return 0;
}

uint64_t BigEndian(const uint8_t* bytes, size_t size) {
  uint64_t value = 0;
  for (size_t i = 0; i < size; ++i) value = value << 8 | bytes[i];
  return value;
}

}  // namespace

double IdxArray::operator[](int64_t i) const {
  const uint64_t bits = BigEndian(data + static_cast<size_t>(i) * element_size, element_size);
  switch (type) {
    case IdxType::kUint8:
      return static_cast<double>(bits);
    case IdxType::kInt8:
      return static_cast<int8_t>(bits);
    case IdxType::kInt16:
      return static_cast<int16_t>(bits);
    case IdxType::kInt32:
      return static_cast<int32_t>(bits);
    case IdxType::kFloat32: {
      const auto word = static_cast<uint32_t>(bits);
      float value;
      std::memcpy(&value, &word, sizeof value);
      return value;
    }
    case IdxType::kFloat64: {
      double value;
      std::memcpy(&value, &bits, sizeof value);
      return value;
    }
  }
  return 0;
}

StatusOr<IdxArray> ParseIdx(const std::string& field, const std::string& path,
                            const std::string& bytes) {
  auto fail = [&](size_t offset, const std::string& expected) {
    return Status::InvalidArgument(field + " " + path + ": at byte " + std::to_string(offset) +
                                   ": expected " + expected);
  };
  if (bytes.size() < 4) return fail(bytes.size(), "a 4-byte IDX magic number");
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  if (b[0] != 0 || b[1] != 0) return fail(0, "two zero bytes (the IDX magic number)");
  IdxArray array;
  array.element_size = ElementSize(b[2]);
  if (array.element_size == 0) {
    char found[8];
    std::snprintf(found, sizeof found, "0x%02x", b[2]);
    return fail(2, std::string("an IDX type: 0x08 (unsigned byte), 0x09 (signed byte), 0x0b "
                               "(int16), 0x0c (int32), 0x0d (float32) or 0x0e (float64); found ") +
                       found);
  }
  array.type = static_cast<IdxType>(b[2]);
  const int rank = b[3];
  if (rank < 1) return fail(3, "at least one dimension");
  size_t offset = 4;
  int64_t count = 1;
  for (int d = 0; d < rank; ++d, offset += 4) {
    if (bytes.size() < offset + 4) return fail(offset, "dimension " + std::to_string(d) + " size");
    const auto size = static_cast<int64_t>(BigEndian(b + offset, 4));
    array.dims.push_back(size);
    // Dimensions whose product no file could hold: said as such, not
    // overflowed.
    if (__builtin_mul_overflow(count, size, &count)) {
      return fail(offset, "dimensions whose product fits a file");
    }
  }
  uint64_t data_bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(count), array.element_size, &data_bytes)) {
    return fail(offset - 4, "dimensions whose product fits a file");
  }
  if (static_cast<uint64_t>(bytes.size() - offset) != data_bytes) {
    return fail(offset, std::to_string(data_bytes) +
                            " data bytes for dimensions of the header, found " +
                            std::to_string(bytes.size() - offset));
  }
  array.data_offset = offset;
  array.data = b + offset;
  array.count = count;
  if (array.type == IdxType::kFloat32 || array.type == IdxType::kFloat64) {
    // Never the value: the file may hold what the job's reader may not see.
    for (int64_t i = 0; i < count; ++i) {
      if (!std::isfinite(static_cast<float>(array[i]))) {
        return fail(array.OffsetOf(i),
                    "a finite number (not nan, inf or beyond the range of a float)");
      }
    }
  }
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
    const double y = labels[i];
    if (y < 0 || y != std::floor(y) || y >= static_cast<double>(ClassLimit(declared_classes))) {
      return Status::InvalidArgument("data.labels_path " + labels_path + ": at byte " +
                                     std::to_string(labels.OffsetOf(i)) + ": expected " +
                                     ExpectedClass(declared_classes));
    }
    classes = std::max(classes, static_cast<int64_t>(y) + 1);
  }
  return std::max(classes, declared_classes);
}

StatusOr<int64_t> CheckIdxTargets(const IdxArray& labels, int64_t samples,
                                  const std::string& labels_path, const std::string& samples_path) {
  if (labels.dims[0] != samples) {
    return Status::InvalidArgument(
        "data.labels_path " + labels_path + ": expected " + std::to_string(samples) +
        " targets in the first dimension (one per sample of " + samples_path + ")");
  }
  // Bounded like data.outputs: one sample's targets are one model output.
  int64_t per_sample = 1;
  for (size_t d = 1; d < labels.dims.size(); ++d) {
    if (__builtin_mul_overflow(per_sample, labels.dims[d], &per_sample) ||
        per_sample > kMaxClasses) {
      per_sample = kMaxClasses + 1;
      break;
    }
  }
  if (per_sample < 1 || per_sample > kMaxClasses) {
    return Status::InvalidArgument("data.labels_path " + labels_path + ": expected 1 to " +
                                   std::to_string(kMaxClasses) +
                                   " targets per sample (the product of the dimensions after "
                                   "the first)");
  }
  return per_sample;
}

}  // namespace accumulus::data
