#include "common/data/numeric_array.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/data/class_labels.h"

namespace accumulus::data {
namespace {

uint64_t Bits(const uint8_t* bytes, size_t size, bool big_endian) {
  uint64_t value = 0;
  for (size_t i = 0; i < size; ++i) {
    value = value << 8 | bytes[big_endian ? i : size - 1 - i];
  }
  return value;
}

float FloatOfBits(uint32_t word) {
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

// IEEE 754 binary16, exactly (every half is a float).
double HalfToDouble(uint16_t half) {
  const int sign = half >> 15 ? -1 : 1;
  const int exponent = (half >> 10) & 0x1F;
  const int fraction = half & 0x3FF;
  if (exponent == 0x1F) return fraction != 0 ? std::nan("") : sign * HUGE_VAL;
  if (exponent == 0) return sign * std::ldexp(fraction, -24);  // subnormal
  return sign * std::ldexp(fraction + 1024, exponent - 25);
}

}  // namespace

size_t ElementSize(ElementType type) {
  switch (type) {
    case ElementType::kBool:
    case ElementType::kUint8:
    case ElementType::kInt8:
      return 1;
    case ElementType::kUint16:
    case ElementType::kInt16:
    case ElementType::kFloat16:
    case ElementType::kBFloat16:
      return 2;
    case ElementType::kUint32:
    case ElementType::kInt32:
    case ElementType::kFloat32:
      return 4;
    case ElementType::kUint64:
    case ElementType::kInt64:
    case ElementType::kFloat64:
      return 8;
  }
  return 1;
}

std::string ElementTypeName(ElementType type) {
  switch (type) {
    case ElementType::kBool:
      return "bool";
    case ElementType::kUint8:
      return "uint8";
    case ElementType::kInt8:
      return "int8";
    case ElementType::kUint16:
      return "uint16";
    case ElementType::kInt16:
      return "int16";
    case ElementType::kUint32:
      return "uint32";
    case ElementType::kInt32:
      return "int32";
    case ElementType::kUint64:
      return "uint64";
    case ElementType::kInt64:
      return "int64";
    case ElementType::kFloat16:
      return "float16";
    case ElementType::kBFloat16:
      return "bfloat16";
    case ElementType::kFloat32:
      return "float32";
    case ElementType::kFloat64:
      return "float64";
  }
  return "";
}

std::string ShapeText(const std::vector<int64_t>& dims) {
  std::string text;
  for (int64_t d : dims) text += (text.empty() ? "" : ", ") + std::to_string(d);
  return "(" + text + (dims.size() == 1 ? ",)" : ")");
}

bool IsFloatingPoint(ElementType type) {
  return type == ElementType::kFloat16 || type == ElementType::kBFloat16 ||
         type == ElementType::kFloat32 || type == ElementType::kFloat64;
}

double NumericArray::operator[](int64_t i) const {
  const size_t size = ElementSize(type);
  const uint64_t bits = Bits(data + static_cast<size_t>(i) * size, size, big_endian);
  switch (type) {
    case ElementType::kBool:
      return bits != 0 ? 1 : 0;
    case ElementType::kUint8:
    case ElementType::kUint16:
    case ElementType::kUint32:
    case ElementType::kUint64:
      return static_cast<double>(bits);
    case ElementType::kInt8:
      return static_cast<int8_t>(bits);
    case ElementType::kInt16:
      return static_cast<int16_t>(bits);
    case ElementType::kInt32:
      return static_cast<int32_t>(bits);
    case ElementType::kInt64:
      return static_cast<double>(static_cast<int64_t>(bits));
    case ElementType::kFloat16:
      return HalfToDouble(static_cast<uint16_t>(bits));
    case ElementType::kBFloat16:  // a float32's upper half
      return FloatOfBits(static_cast<uint32_t>(bits << 16));
    case ElementType::kFloat32:
      return FloatOfBits(static_cast<uint32_t>(bits));
    case ElementType::kFloat64: {
      double value;
      std::memcpy(&value, &bits, sizeof value);
      return value;
    }
  }
  return 0;
}

Status ArrayError(const std::string& field, const std::string& path, size_t offset,
                  const std::string& expected) {
  return Status::InvalidArgument(field + " " + path + ": at byte " + std::to_string(offset) +
                                 ": expected " + expected);
}

Status PlaceData(const std::string& field, const std::string& path, std::string_view bytes,
                 size_t dims_offset, size_t data_offset, NumericArray* array) {
  // Dimensions whose product no file could hold: said as such, not
  // overflowed.
  int64_t count = 1;
  uint64_t data_bytes = 0;
  for (int64_t size : array->dims) {
    if (size < 0 || __builtin_mul_overflow(count, size, &count)) {
      return ArrayError(field, path, dims_offset, "dimensions whose product fits a file");
    }
  }
  if (__builtin_mul_overflow(static_cast<uint64_t>(count), ElementSize(array->type), &data_bytes)) {
    return ArrayError(field, path, dims_offset, "dimensions whose product fits a file");
  }
  const uint64_t found = bytes.size() >= data_offset ? bytes.size() - data_offset : 0;
  if (found != data_bytes) {
    return ArrayError(field, path, data_offset,
                      std::to_string(data_bytes) +
                          " data bytes for dimensions of the header, found " +
                          std::to_string(found));
  }
  array->data_offset = data_offset;
  array->data = reinterpret_cast<const uint8_t*>(bytes.data()) + data_offset;
  array->count = count;
  if (IsFloatingPoint(array->type)) {
    for (int64_t i = 0; i < count; ++i) {
      if (!std::isfinite(static_cast<float>((*array)[i]))) {
        return ArrayError(field, path, array->OffsetOf(i),
                          "a finite number (not nan, inf or beyond the range of a float)");
      }
    }
  }
  return Status::Ok();
}

namespace {

// The values of one sample, the product of the dimensions after the first;
// kMaxClasses + 1 where that is more than a job's outputs may be.
int64_t ValuesPerSample(const NumericArray& labels) {
  int64_t per_sample = 1;
  for (size_t d = 1; d < labels.dims.size(); ++d) {
    if (__builtin_mul_overflow(per_sample, labels.dims[d], &per_sample) ||
        per_sample > kMaxClasses) {
      return kMaxClasses + 1;
    }
  }
  return per_sample;
}

// Each of [samples, classes] `labels`' rows is a single 1 and zeros.
Status CheckOneHot(const NumericArray& labels, int64_t samples, int64_t classes,
                   const std::string& labels_path) {
  // Element (row, column) in storage order.
  const auto at = [&](int64_t row, int64_t column) {
    return labels.column_major ? column * samples + row : row * classes + column;
  };
  for (int64_t row = 0; row < samples; ++row) {
    int64_t ones = 0;
    for (int64_t column = 0; column < classes; ++column) {
      const double y = labels[at(row, column)];
      if (y != 0 && y != 1) {
        return ArrayError("data.labels_path", labels_path, labels.OffsetOf(at(row, column)),
                          "0 or 1 in sample " + std::to_string(row) +
                              "'s one-hot row: soft labels are no class labels");
      }
      ones += y == 1;
    }
    if (ones != 1) {
      return ArrayError("data.labels_path", labels_path, labels.OffsetOf(at(row, 0)),
                        "a single 1 in sample " + std::to_string(row) + "'s one-hot row; found " +
                            std::to_string(ones));
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ClassLabels> CheckClassLabels(const NumericArray& labels, int64_t samples,
                                       const std::string& labels_path,
                                       const std::string& samples_path, int64_t declared_classes) {
  const int64_t per_sample = ValuesPerSample(labels);
  const bool one_hot = labels.dims.size() == 2 && per_sample > 1;
  if (labels.dims.empty() || labels.dims[0] != samples || (per_sample != 1 && !one_hot)) {
    return Status::InvalidArgument("data.labels_path " + labels_path + ": expected " +
                                   std::to_string(samples) + " class labels (one per sample of " +
                                   samples_path + "): indices, [" + std::to_string(samples) +
                                   "] or [" + std::to_string(samples) + ", 1], or one-hot rows, [" +
                                   std::to_string(samples) + ", classes]");
  }
  if (one_hot) {
    if (per_sample > kMaxClasses || (declared_classes > 0 && per_sample != declared_classes)) {
      return Status::InvalidArgument(
          "data.labels_path " + labels_path + ": one-hot labels of " + std::to_string(per_sample) +
          " classes; " +
          (per_sample > kMaxClasses ? "at most " + std::to_string(kMaxClasses)
                                    : "data.outputs declares " + std::to_string(declared_classes)));
    }
    if (Status s = CheckOneHot(labels, samples, per_sample, labels_path); !s.ok()) return s;
    return ClassLabels{per_sample, true};
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
  return ClassLabels{std::max(classes, declared_classes), false};
}

StatusOr<int64_t> CheckTargets(const NumericArray& labels, int64_t samples,
                               const std::string& labels_path, const std::string& samples_path) {
  if (labels.dims.empty() || labels.dims[0] != samples) {
    return Status::InvalidArgument(
        "data.labels_path " + labels_path + ": expected " + std::to_string(samples) +
        " targets in the first dimension (one per sample of " + samples_path + ")");
  }
  // Bounded like data.outputs: one sample's targets are one model output.
  const int64_t per_sample = ValuesPerSample(labels);
  if (per_sample < 1 || per_sample > kMaxClasses) {
    return Status::InvalidArgument("data.labels_path " + labels_path + ": expected 1 to " +
                                   std::to_string(kMaxClasses) +
                                   " targets per sample (the product of the dimensions after "
                                   "the first)");
  }
  return per_sample;
}

}  // namespace accumulus::data
