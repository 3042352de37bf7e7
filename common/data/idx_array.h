// IDX files (the MNIST format) as the trainer reads them, parsed without
// LibTorch: two zero bytes, a type byte (0x08: unsigned byte), the number of
// dimensions, each dimension as a big-endian uint32, then the data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace accumulus::data {

struct IdxArray {
  std::vector<int64_t> dims;
  size_t data_offset = 0;  // where the data starts in the file
  const uint8_t* data = nullptr;
  int64_t count = 0;  // the product of dims
};

// `bytes` must outlive the array (it points into them). INVALID_ARGUMENT
// naming `field`, the path and the byte offset of what is wrong, and what
// was expected there.
StatusOr<IdxArray> ParseIdx(const std::string& field, const std::string& path,
                            const std::string& bytes);

// One class label per sample: `labels` is one-dimensional with `samples`
// entries, each below the declared classes (0: any byte). Returns the
// classes (the largest label + 1, at least the declared).
StatusOr<int64_t> CheckIdxLabels(const IdxArray& labels, int64_t samples,
                                 const std::string& labels_path, const std::string& samples_path,
                                 int64_t declared_classes);

}  // namespace accumulus::data
