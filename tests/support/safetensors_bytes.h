// safetensors files made in memory: the header's length (8 bytes,
// little-endian), the JSON `header`, then `data`.
#pragma once

#include <string>

namespace accumulus::testing {

inline std::string Safetensors(const std::string& header, const std::string& data) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>(header.size() >> (8 * i) & 0xFF);
  return out + header + data;
}

}  // namespace accumulus::testing
