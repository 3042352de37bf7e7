#include "worker/cgroup_memory.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

namespace accumulus::worker {
namespace {

// v1 writes "no limit" as the largest page-aligned int64 (9223372036854771712).
constexpr int64_t kNoLimitAbove = int64_t{1} << 62;

// The limit in the file: a byte count, or 0 for "max", no file or anything else.
int64_t ReadLimit(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || text == "max") return 0;
  int64_t bytes = 0;
  for (char c : text) {
    if (c < '0' || c > '9' || bytes > (kNoLimitAbove - 9) / 10) return 0;
    bytes = bytes * 10 + (c - '0');
  }
  return bytes;
}

// The tightest limit in `file` of `base` + `path` and each of its ancestors
// up to `base` itself.
int64_t TightestUpwards(const std::string& base, std::string path, const std::string& file) {
  int64_t tightest = 0;
  while (true) {
    const int64_t limit = ReadLimit(base + path + "/" + file);
    if (limit > 0 && (tightest == 0 || limit < tightest)) tightest = limit;
    if (path.empty() || path == "/") return tightest;
    const size_t slash = path.find_last_of('/');
    path.erase(slash == std::string::npos ? 0 : slash);
  }
}

}  // namespace

int64_t CgroupMemoryLimitBytes(std::string_view self_cgroup, const std::string& cgroup_root) {
  int64_t tightest = 0;
  auto take = [&tightest](int64_t limit) {
    if (limit > 0 && (tightest == 0 || limit < tightest)) tightest = limit;
  };
  std::istringstream lines{std::string(self_cgroup)};
  for (std::string line; std::getline(lines, line);) {
    // "hierarchy-id:controllers:path"; the path may itself hold ':'.
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string id = line.substr(0, first);
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (id == "0" && controllers.empty()) {
      take(TightestUpwards(cgroup_root, path, "memory.max"));
      continue;
    }
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) {
      if (name == "memory") {
        take(TightestUpwards(cgroup_root + "/memory", path, "memory.limit_in_bytes"));
      }
    }
  }
  return tightest;
}

int64_t UsableMemoryBytes() {
  const int64_t physical =
      static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  const int64_t limit = CgroupMemoryLimitBytes(text.str());
  return limit > 0 ? std::min(physical, limit) : physical;
}

}  // namespace accumulus::worker
