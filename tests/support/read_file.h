// A whole file as a string ("" when it cannot be read): logs and configs
// the tests look into.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace accumulus::testing {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace accumulus::testing
