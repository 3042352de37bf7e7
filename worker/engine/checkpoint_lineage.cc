#include "worker/engine/checkpoint_lineage.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "worker/engine/durable_file.h"

namespace accumulus::engine {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHeader = "# accumulus checkpoint lineage: one line per start of rank 0";

std::string PathIn(const std::string& dir) {
  return (fs::path(dir) / CheckpointLineage::kFileName).string();
}

std::string Line(const LineageEntry& e) {
  return "attempt " + std::to_string(e.attempt) + " resumed_after_step " +
         std::to_string(e.resumed_after_step) + " from_attempt " + std::to_string(e.from_attempt);
}

// One entry's line, strictly: the three keywords, non-negative numbers and
// nothing after them.
bool ParseLine(const std::string& line, LineageEntry* entry) {
  long long attempt = -1, step = -1, from = -1;
  int consumed = 0;
  if (std::sscanf(line.c_str(), "attempt %lld resumed_after_step %lld from_attempt %lld%n",
                  &attempt, &step, &from, &consumed) != 3 ||
      static_cast<size_t>(consumed) != line.size() || attempt < 0 || step < 0 || from < 0) {
    return false;
  }
  *entry = {attempt, step, from};
  return true;
}

}  // namespace

CheckpointLineage::CheckpointLineage(std::vector<LineageEntry> entries)
    : entries_(std::move(entries)) {
  // From the newest start back through whose checkpoint each resumed from.
  int64_t upto = std::numeric_limits<int64_t>::max();
  for (int64_t i = static_cast<int64_t>(entries_.size()) - 1; i >= 0;) {
    const LineageEntry& e = entries_[static_cast<size_t>(i)];
    history_.push_back({e.attempt, e.resumed_after_step, upto});
    upto = std::min(upto, e.resumed_after_step);
    if (e.resumed_after_step == 0) break;
    int64_t parent = i - 1;
    while (parent >= 0 && entries_[static_cast<size_t>(parent)].attempt != e.from_attempt) --parent;
    if (parent < 0) {
      // Its start predates the lineage (checkpoints written before there
      // was one): everything it wrote up to the resume point.
      history_.push_back({e.from_attempt, 0, upto});
      break;
    }
    i = parent;
  }
}

StatusOr<CheckpointLineage> CheckpointLineage::Read(const std::string& dir) {
  const std::string path = PathIn(dir);
  std::ifstream in(path);
  if (!in) {
    std::error_code error;
    if (!fs::exists(path, error)) return CheckpointLineage({});
    return FileError("cannot read the checkpoint lineage " + path, errno);
  }
  std::vector<LineageEntry> entries;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    LineageEntry entry;
    if (!ParseLine(line, &entry)) {
      // Never the line itself: the file may have been replaced by anything.
      return Status::DataLoss(path + " line " + std::to_string(number) +
                              ": expected \"attempt <n> resumed_after_step <n> from_attempt <n>\"");
    }
    entries.push_back(entry);
  }
  return CheckpointLineage(std::move(entries));
}

Status CheckpointLineage::Append(const std::string& dir, const LineageEntry& entry) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return FileError("cannot create the checkpoint dir " + dir, error.value());
  StatusOr<CheckpointLineage> lineage = Read(dir);
  if (!lineage.ok()) return lineage.status();
  std::ostringstream text;
  text << kHeader << "\n";
  for (const LineageEntry& e : lineage->entries_) text << Line(e) << "\n";
  text << Line(entry) << "\n";
  return ReplaceFileDurably(
      PathIn(dir), text.str(),
      ".tmp-attempt-" + std::to_string(entry.attempt) + "-" + std::to_string(getpid()));
}

int64_t CheckpointLineage::NewestAbove(int64_t attempt) const {
  int64_t newest = 0;
  for (const LineageEntry& e : entries_) {
    if (e.attempt > attempt) newest = std::max(newest, e.attempt);
  }
  return newest;
}

bool CheckpointLineage::Allows(int64_t attempt, int64_t step, std::string* why) const {
  if (entries_.empty()) return true;
  const Range* own = nullptr;
  for (const Range& r : history_) {
    if (r.attempt != attempt) continue;
    if (step > r.after && step <= r.upto) return true;
    if (own == nullptr) own = &r;
  }
  if (own == nullptr) {
    *why = "attempt " + std::to_string(attempt) +
           " is not in the history its lineage records (a start that was superseded)";
  } else if (step > own->upto) {
    *why = "written by attempt " + std::to_string(attempt) +
           " after its successor resumed after step " + std::to_string(own->upto) +
           " (a superseded attempt's)";
  } else {
    *why = "attempt " + std::to_string(attempt) + " resumed after step " +
           std::to_string(own->after) + ": an earlier checkpoint of it is not its history";
  }
  return false;
}

}  // namespace accumulus::engine
