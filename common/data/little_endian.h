// Unsigned little-endian integers in a file's bytes: how zip, gzip, .npy
// and safetensors store their lengths and offsets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace accumulus::data {

// The `size` bytes (at most 8) at `at` of `bytes`, which must hold them.
inline uint64_t LittleEndian(std::string_view bytes, size_t at, size_t size) {
  uint64_t value = 0;
  for (size_t i = size; i-- > 0;) value = value << 8 | static_cast<uint8_t>(bytes[at + i]);
  return value;
}

}  // namespace accumulus::data
