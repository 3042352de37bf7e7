// Hugging Face's safetensors files, as safetensors.numpy.save_file and
// safetensors.torch.save_file write them: an 8-byte little-endian header
// length, a JSON header giving each tensor's dtype, shape and byte range,
// then the tensors' bytes, little-endian, in C order. Parsed without
// LibTorch and read in place; nothing in such a file runs code (its reason
// to exist, against a pickle).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/data/numeric_array.h"
#include "common/status.h"

namespace accumulus::data {

struct SafetensorsTensor {
  std::string name;
  ElementType type = ElementType::kUint8;
  std::vector<int64_t> shape;
  size_t begin = 0;  // its bytes in the file: [begin, end)
  size_t end = 0;
  size_t shape_offset = 0;  // where the header gives its shape
};

class SafetensorsFile {
 public:
  // The header of `bytes` (which must outlive the file): every tensor's
  // entry checked — a dtype of numbers (BOOL, U8 to U64, I8 to I64, F16,
  // BF16, F32, F64; FP8 and complex are refused by name), whole dimensions,
  // and a byte range inside the data whose length the shape and dtype give.
  // INVALID_ARGUMENT "FIELD PATH: at byte N: expected ..." otherwise.
  static StatusOr<SafetensorsFile> Parse(const std::string& field, const std::string& path,
                                         std::string_view bytes);

  // In the header's order.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }

  // The tensor `name` names, as an array read in place (floats checked
  // finite), or the file's one tensor where `name` is empty. Otherwise
  // INVALID_ARGUMENT naming `name_field` ("data.array") and listing the
  // file's tensors with their dtypes and shapes.
  StatusOr<NumericArray> Array(const std::string& name_field, const std::string& name) const;

 private:
  SafetensorsFile(std::string field, std::string path, std::string_view bytes)
      : field_(std::move(field)), path_(std::move(path)), bytes_(bytes) {}

  std::string field_;
  std::string path_;
  std::string_view bytes_;
  std::vector<SafetensorsTensor> tensors_;
};

}  // namespace accumulus::data
