// Names that a data file holds (a zip member's, a tensor's), as a message
// may show them: the file's content may hold anything, so control
// characters are shown as '?', a long name is cut, a long list counted.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

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

// The items a list in an error shows; the rest are counted.
inline constexpr size_t kMostListed = 12;

// What a file holds, for an error that asks for one of its items: "a, b, c"
// and, past the first kMostListed, how many more.
inline std::string ShownList(const std::vector<std::string>& items) {
  std::string list;
  for (size_t i = 0; i < items.size() && i < kMostListed; ++i) {
    list += (i > 0 ? ", " : "") + items[i];
  }
  if (items.size() > kMostListed) {
    list += " and " + std::to_string(items.size() - kMostListed) + " more";
  }
  return list;
}

}  // namespace accumulus::data
