// .npy files made in memory: the magic string, the version, the header's
// length and the header (`dict`, padded as numpy.save pads it, to a
// multiple of 64 bytes), then `data`.
#pragma once

#include <cstddef>
#include <string>

namespace accumulus::testing {

inline std::string Npy(const std::string& dict, const std::string& data, char version = 1) {
  const size_t prefix = version == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY") + version + '\0';
  for (size_t i = 0; i < prefix - 8; ++i) {
    out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  }
  return out + header + data;
}

}  // namespace accumulus::testing
