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

}  // namespace accumulus::data
