// Where accumulus finds its own files.
#pragma once

#include <string>

namespace accumulus {

// The path of `name` in the directory of the running executable (the build
// tree or the install prefix keep accumulus's binaries side by side).
std::string SiblingExecutable(const std::string& name);

}  // namespace accumulus
