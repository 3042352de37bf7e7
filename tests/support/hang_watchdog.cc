#include "tests/support/hang_watchdog.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace accumulus::testing {
namespace {

constexpr std::chrono::seconds kDefaultLimit{240};
// After the kill, how long the test has to end on its own.
constexpr std::chrono::seconds kGrace{30};
// The end of each log: what it said last is what it was doing.
constexpr std::streamoff kTailBytes = 6000;

// The parent of each process (from /proc/PID/stat: "PID (COMM) STATE PPID",
// where COMM may itself hold spaces and parentheses).
std::multimap<pid_t, pid_t> ChildrenByParent() {
  std::multimap<pid_t, pid_t> children;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t comm_end = stat.rfind(')');
    if (comm_end == std::string::npos) continue;  // it ended meanwhile
    std::istringstream rest(stat.substr(comm_end + 1));
    char state = 0;
    pid_t parent = 0;
    if (rest >> state >> parent) children.emplace(parent, std::stoi(name));
  }
  return children;
}

// Every process this one started, and theirs (a worker's trainers).
std::vector<pid_t> Descendants() {
  const std::multimap<pid_t, pid_t> children = ChildrenByParent();
  std::vector<pid_t> found;
  std::vector<pid_t> parents = {getpid()};
  while (!parents.empty()) {
    const pid_t parent = parents.back();
    parents.pop_back();
    auto [first, last] = children.equal_range(parent);
    for (auto it = first; it != last; ++it) {
      found.push_back(it->second);
      parents.push_back(it->second);
    }
  }
  return found;
}

std::string Tail(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const std::streamoff size = in.tellg();
  if (size <= 0) return "(empty)\n";
  const std::streamoff from = std::max<std::streamoff>(0, size - kTailBytes);
  in.seekg(from);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (from > 0) {
    // From the first whole line on.
    const size_t line = text.find('\n');
    text = "[...]\n" + (line == std::string::npos ? text : text.substr(line + 1));
  }
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

void PrintLogs(const std::string& dir) {
  std::vector<std::filesystem::path> logs;
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, error);
       it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (error) break;
    if (it->is_regular_file(error) && it->path().extension() == ".log") logs.push_back(it->path());
  }
  std::sort(logs.begin(), logs.end());
  for (const auto& log : logs) {
    std::fprintf(stderr, "----- %s\n%s", log.c_str(), Tail(log).c_str());
  }
}

}  // namespace

std::chrono::seconds TestHangLimit() {
  const char* set = std::getenv("ACCUMULUS_TEST_HANG_SECONDS");
  if (set == nullptr || *set == '\0') return kDefaultLimit;
  return std::chrono::seconds(std::strtol(set, nullptr, 10));
}

HangWatchdog::HangWatchdog(std::string log_dir, std::string test_name, std::chrono::seconds limit)
    : log_dir_(std::move(log_dir)), test_name_(std::move(test_name)), limit_(limit) {
  if (limit_.count() <= 0) return;
  const auto deadline = std::chrono::steady_clock::now() + limit_;
  thread_ = std::thread([this, deadline] { Watch(deadline); });
}

HangWatchdog::~HangWatchdog() {
  {
    MutexLock lock(&mutex_);
    disarmed_ = true;
  }
  disarmed_changed_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

bool HangWatchdog::StillArmedAt(std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(&mutex_);
  while (!disarmed_) {
    if (!disarmed_changed_.WaitUntil(&mutex_, deadline)) return !disarmed_;
  }
  return false;
}

void HangWatchdog::Watch(std::chrono::steady_clock::time_point deadline) {
  if (!StillArmedAt(deadline)) return;
  std::fprintf(stderr,
               "===== %s is still running after %lld s: it hangs. The last lines of its "
               "processes' logs (%s):\n",
               test_name_.c_str(), static_cast<long long>(limit_.count()), log_dir_.c_str());
  PrintLogs(log_dir_);
  const std::vector<pid_t> processes = Descendants();
  std::fprintf(stderr, "===== killing the %zu process(es) it started; it fails from here\n",
               processes.size());
  std::fflush(stderr);
  for (pid_t pid : processes) kill(pid, SIGKILL);
  if (!StillArmedAt(std::chrono::steady_clock::now() + kGrace)) return;
  std::fprintf(stderr, "===== %s did not end %lld s after its processes were killed; exiting\n",
               test_name_.c_str(), static_cast<long long>(kGrace.count()));
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace accumulus::testing
