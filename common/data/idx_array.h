// IDX files (the MNIST format) as the trainer reads them, parsed without
// LibTorch: two zero bytes, a type byte, the number of dimensions, each
// dimension as a big-endian uint32, then the data, big-endian too.
#pragma once

#include <string>
#include <string_view>

#include "common/data/numeric_array.h"
#include "common/status.h"

namespace accumulus::data {

// Any of the format's types: unsigned byte (0x08), signed byte (0x09), int16
// (0x0B), int32 (0x0C), float32 (0x0D), float64 (0x0E). An ArrayParser.
StatusOr<NumericArray> ParseIdx(const std::string& field, const std::string& path,
                                std::string_view bytes);

}  // namespace accumulus::data
