// A name that a data file holds (a zip member's, a tensor's), as a message
// may show it: the file's content may hold anything, so control characters
// are shown as '?' and a long name is cut.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace accumulus::data {

inline std::string ShownName(std::string_view name) {
  constexpr size_t kMostShown = 200;
  std::string shown;
  for (char c : name.substr(0, kMostShown)) {
    const auto u = static_cast<unsigned char>(c);
    shown += u >= 0x20 && u != 0x7F ? c : '?';
  }
  if (name.size() > kMostShown) shown += "...";
  return shown;
}

}  // namespace accumulus::data
