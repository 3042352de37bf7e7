#include "common/paths.h"

#include <filesystem>

namespace accumulus {

std::string SiblingExecutable(const std::string& name) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return name;  // Fall back to a PATH lookup by the caller.
  return (self.parent_path() / name).string();
}

}  // namespace accumulus
