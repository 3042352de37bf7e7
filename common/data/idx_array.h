// IDX files (the MNIST format) as the trainer reads them, parsed without
// LibTorch: two zero bytes, a type byte, the number of dimensions, each
// dimension as a big-endian uint32, then the data, big-endian too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace accumulus::data {

// The element types the format defines, by their type byte.
enum class IdxType : uint8_t {
  kUint8 = 0x08,
  kInt8 = 0x09,
  kInt16 = 0x0B,
  kInt32 = 0x0C,
  kFloat32 = 0x0D,
  kFloat64 = 0x0E,
};

struct IdxArray {
  IdxType type = IdxType::kUint8;
  size_t element_size = 1;  // bytes
  std::vector<int64_t> dims;
  size_t data_offset = 0;  // where the data starts in the file
  const uint8_t* data = nullptr;
  int64_t count = 0;  // the product of dims

  // Element i (0 <= i < count) as a number.
  double operator[](int64_t i) const;
  // Where element i starts in the file.
  size_t OffsetOf(int64_t i) const { return data_offset + static_cast<size_t>(i) * element_size; }
};

// `bytes` must outlive the array (it points into them). INVALID_ARGUMENT
// naming `field`, the path and the byte offset of what is wrong, and what
// was expected there. Floating-point elements must be finite and within a
// float's range (they are trained as float32).
StatusOr<IdxArray> ParseIdx(const std::string& field, const std::string& path,
                            const std::string& bytes);

// One class label per sample: `labels` is one-dimensional with `samples`
// entries, each a whole number below the declared classes (0: any up to
// kMaxClasses), of any type. Returns the classes (the largest label + 1, at
// least the declared).
StatusOr<int64_t> CheckIdxLabels(const IdxArray& labels, int64_t samples,
                                 const std::string& labels_path, const std::string& samples_path,
                                 int64_t declared_classes);

// Regression targets: `labels` has `samples` entries in its first dimension
// (one target each, or a target tensor of the other dimensions). Returns the
// targets per sample.
StatusOr<int64_t> CheckIdxTargets(const IdxArray& labels, int64_t samples,
                                  const std::string& labels_path, const std::string& samples_path);

}  // namespace accumulus::data
