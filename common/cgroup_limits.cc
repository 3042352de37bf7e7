#include "common/cgroup_limits.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>
#include <thread>

#include "common/small_file.h"

namespace accumulus {
namespace {

// v1 writes "no limit" as the largest page-aligned int64 (9223372036854771712).
constexpr int64_t kNoLimitAbove = int64_t{1} << 62;

// A whole number of `text`, or 0 for "max", -1 (v1's "no quota") and
// anything else.
int64_t ParseCount(const std::string& text) {
  if (text.empty()) return 0;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9' || value > (kNoLimitAbove - 9) / 10) return 0;
    value = value * 10 + (c - '0');
  }
  return value;
}

// The first two words of a file ("" where it or they are missing).
std::pair<std::string, std::string> ReadWords(const std::string& path) {
  const StatusOr<std::string> text = ReadSmallFile(path, 4096, path);  // a line of numbers
  std::istringstream in(text.ok() ? *text : "");
  std::pair<std::string, std::string> words;
  in >> words.first >> words.second;
  return words;
}

// Folds `limit` (0: none) into `tightest` (0: none yet).
void KeepTightest(double limit, double* tightest) {
  if (limit > 0 && (*tightest == 0 || limit < *tightest)) *tightest = limit;
}

// A limit read from the cgroup directory `dir` (> 0), or 0 for none.
using LimitIn = std::function<double(const std::string& dir)>;

// The tightest limit of `base` + `path` and of each of its ancestors up to
// `base` itself.
double TightestUpwards(const std::string& base, std::string path, const LimitIn& limit_in) {
  double tightest = 0;
  while (true) {
    KeepTightest(limit_in(base + path), &tightest);
    if (path.empty() || path == "/") return tightest;
    const size_t slash = path.find_last_of('/');
    path.erase(slash == std::string::npos ? 0 : slash);
  }
}

// Calls `visit(base, path, v2)` for each hierarchy of /proc/self/cgroup that
// holds `v1_controller`'s files: the unified one (v2; `base` the root) and
// that controller's v1 one (`base` its mount).
void ForEachHierarchy(
    std::string_view self_cgroup, const std::string& cgroup_root, const std::string& v1_controller,
    const std::function<void(const std::string& base, const std::string& path, bool v2)>& visit) {
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
      visit(cgroup_root, path, /*v2=*/true);
      continue;
    }
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) {
      // v1 mounts a co-mounted hierarchy under each of its names' join
      // ("cpu,cpuacct"), with links by single name; the single name is enough.
      if (name == v1_controller) visit(cgroup_root + "/" + name, path, /*v2=*/false);
    }
  }
}

// The tightest limit over the hierarchies of /proc/self/cgroup: `v2` in the
// unified one, `v1` in the one of `v1_controller`.
double TightestOf(std::string_view self_cgroup, const std::string& cgroup_root,
                  const std::string& v1_controller, const LimitIn& v2, const LimitIn& v1) {
  double tightest = 0;
  ForEachHierarchy(self_cgroup, cgroup_root, v1_controller,
                   [&](const std::string& base, const std::string& path, bool is_v2) {
                     KeepTightest(TightestUpwards(base, path, is_v2 ? v2 : v1), &tightest);
                   });
  return tightest;
}

// The value of the line "`key` N" of the file at `path`; -1 where the file
// or the line is missing.
int64_t KeyedCount(const std::string& path, const std::string& key) {
  const StatusOr<std::string> text = ReadSmallFile(path, 4096, path);
  if (!text.ok()) return -1;
  std::istringstream in(*text);
  for (std::string name, value; in >> name >> value;) {
    if (name == key) return ParseCount(value);
  }
  return -1;
}

// The text of /proc/self/cgroup ("" where there is none: no limits known).
std::string SelfCgroup() {
  StatusOr<std::string> text = ReadSmallFile("/proc/self/cgroup", 1 << 16, "/proc/self/cgroup");
  return text.ok() ? *text : "";
}

// A CPU quota over its period, in cores (0: no quota, or not numbers).
double QuotaCores(const std::string& quota, const std::string& period) {
  const int64_t q = ParseCount(quota), p = ParseCount(period);
  return q > 0 && p > 0 ? static_cast<double>(q) / static_cast<double>(p) : 0.0;
}

}  // namespace

int64_t CgroupMemoryLimitBytes(std::string_view self_cgroup, const std::string& cgroup_root) {
  auto file_limit = [](const std::string& file) {
    return [file](const std::string& dir) {
      return static_cast<double>(ParseCount(ReadWords(dir + "/" + file).first));
    };
  };
  return static_cast<int64_t>(TightestOf(self_cgroup, cgroup_root, "memory",
                                         file_limit("memory.max"),
                                         file_limit("memory.limit_in_bytes")));
}

double CgroupCpuLimitCores(std::string_view self_cgroup, const std::string& cgroup_root) {
  auto v2 = [](const std::string& dir) {
    const auto [quota, period] = ReadWords(dir + "/cpu.max");
    return QuotaCores(quota, period);
  };
  auto v1 = [](const std::string& dir) {
    return QuotaCores(ReadWords(dir + "/cpu.cfs_quota_us").first,
                      ReadWords(dir + "/cpu.cfs_period_us").first);
  };
  return TightestOf(self_cgroup, cgroup_root, "cpu", v2, v1);
}

int64_t CgroupOomKills(std::string_view self_cgroup, const std::string& cgroup_root) {
  int64_t kills = -1;
  ForEachHierarchy(self_cgroup, cgroup_root, "memory",
                   [&](const std::string& base, std::string path, bool v2) {
                     const std::string file = v2 ? "memory.events" : "memory.oom_control";
                     // The deepest cgroup with the file: the process's own, or the one a
                     // container shows at the mount's root (v1 without a cgroup
                     // namespace names the host's path).
                     while (kills < 0) {
                       kills = KeyedCount(base + path + "/" + file, "oom_kill");
                       if (path.empty() || path == "/") break;
                       const size_t slash = path.find_last_of('/');
                       path.erase(slash == std::string::npos ? 0 : slash);
                     }
                   });
  return kills;
}

int64_t OomKills() { return CgroupOomKills(SelfCgroup()); }

int64_t UsableMemoryBytes() {
  const int64_t physical =
      static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  const int64_t limit = CgroupMemoryLimitBytes(SelfCgroup());
  return limit > 0 ? std::min(physical, limit) : physical;
}

int UsableCores() {
  // The CPUs this process may run on (a cpuset, taskset), else the machine's.
  cpu_set_t allowed;
  const int cores = sched_getaffinity(0, sizeof allowed, &allowed) == 0
                        ? std::max(1, CPU_COUNT(&allowed))
                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const double quota = CgroupCpuLimitCores(SelfCgroup());
  if (quota <= 0) return cores;
  return std::clamp(static_cast<int>(std::floor(quota)), 1, cores);
}

}  // namespace accumulus
