// An n-dimensional array of numbers as a data file stores it (IDX, NumPy's
// .npy, safetensors), read in place: the element type, the byte order and
// the layout say how to read element i. What the array readers share.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace accumulus::data {

enum class ElementType {
  kBool,
  kUint8,
  kInt8,
  kUint16,
  kInt16,
  kUint32,
  kInt32,
  kUint64,
  kInt64,
  kFloat16,
  kBFloat16,  // safetensors' BF16: a float32's upper half
  kFloat32,
  kFloat64,
};

size_t ElementSize(ElementType type);
// numpy's name of the type: "uint8", "float32", "bool".
std::string ElementTypeName(ElementType type);
// A shape as numpy prints it: "(60000, 28, 28)", "(48,)".
std::string ShapeText(const std::vector<int64_t>& dims);
bool IsFloatingPoint(ElementType type);

struct NumericArray {
  ElementType type = ElementType::kUint8;
  bool big_endian = false;
  // Stored with the first dimension varying fastest (NumPy's
  // fortran_order), not the last.
  bool column_major = false;
  std::vector<int64_t> dims;
  size_t data_offset = 0;  // where the data starts in the file
  const uint8_t* data = nullptr;
  int64_t count = 0;  // the product of dims

  // Element i in storage order (0 <= i < count) as a number.
  double operator[](int64_t i) const;
  // Where element i starts in the file.
  size_t OffsetOf(int64_t i) const {
    return data_offset + static_cast<size_t>(i) * ElementSize(type);
  }
};

// INVALID_ARGUMENT "FIELD PATH: at byte OFFSET: expected EXPECTED": how the
// array readers say what is wrong and where, never what the file holds.
Status ArrayError(const std::string& field, const std::string& path, size_t offset,
                  const std::string& expected);

// Completes `array`, whose type, byte order, layout and dims are set, over
// the file's `bytes` from `data_offset`: the product of the dims (named at
// `dims_offset` when it overflows), then exactly its elements, floats finite
// and within a float's range (they are trained as float32). The array
// points into `bytes`, which must outlive it.
Status PlaceData(const std::string& field, const std::string& path, std::string_view bytes,
                 size_t dims_offset, size_t data_offset, NumericArray* array);

// A format's reader (ParseIdx, ParseNpy): the array in `bytes` (a file's
// whole content, read or mapped, which must outlive it), or INVALID_ARGUMENT
// naming `field`, the path and the byte offset of what is wrong.
using ArrayParser = StatusOr<NumericArray> (*)(const std::string& field, const std::string& path,
                                               std::string_view bytes);

struct ClassLabels {
  int64_t classes = 0;
  // The labels are one-hot rows, [samples, classes]: a sample's class is
  // the column of its row's 1.
  bool one_hot = false;
};

// One class label per sample, `samples` of them in the first dimension:
// - class indices, [samples] (or [samples, 1], as a column vector): whole
//   numbers of any type below the declared classes (0: any up to
//   kMaxClasses); the classes are the largest label + 1, at least the
//   declared;
// - or one-hot rows, [samples, classes] of more than one class (as Keras'
//   to_categorical writes them): each row a single 1 and zeros (soft
//   labels are refused at their row); the classes are the rows' width,
//   which the declared must equal.
StatusOr<ClassLabels> CheckClassLabels(const NumericArray& labels, int64_t samples,
                                       const std::string& labels_path,
                                       const std::string& samples_path, int64_t declared_classes);

// Regression targets: `labels` has `samples` entries in its first dimension
// (one target each, or a target tensor of the other dimensions). Returns the
// targets per sample.
StatusOr<int64_t> CheckTargets(const NumericArray& labels, int64_t samples,
                               const std::string& labels_path, const std::string& samples_path);

}  // namespace accumulus::data
