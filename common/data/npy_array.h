// NumPy's .npy files (format versions 1 to 3, as numpy.save writes them),
// parsed without LibTorch: the magic string "\x93NUMPY", the version, the
// header's length, the header — a Python dict literal of 'descr' (the
// dtype), 'fortran_order' and 'shape' — then the data.
#pragma once

#include <string>
#include <string_view>

#include "common/data/numeric_array.h"
#include "common/status.h"

namespace accumulus::data {

// Numeric dtypes of either byte order: bool, int8 to int64, uint8 to
// uint64, float16, float32, float64; C or Fortran order. An ArrayParser;
// structured, text and object arrays (which need pickle) are refused.
StatusOr<NumericArray> ParseNpy(const std::string& field, const std::string& path,
                                std::string_view bytes);

// The dtype and shape a .npy file's header gives, as numpy shows them
// ("uint8 (60000, 28, 28)"), from the file's first bytes (the data need not
// follow); "" where they are not a .npy header.
std::string DescribeNpy(std::string_view head);

}  // namespace accumulus::data
