// The fence on a job's checkpoint directory: which attempt started when, and
// from whose checkpoint. Each start of an attempt's rank 0 appends one entry
// (attempt A resumed after step S from attempt B) before it trains. From it:
//
//  - an attempt is superseded once an entry of a newer attempt exists: it
//    then writes no checkpoint and publishes no output (it is a trainer the
//    controller gave up on, still running, e.g. on a frozen worker);
//  - the history a start continues is the chain of entries from the newest
//    back through each entry's `from_attempt`: attempt A owns the steps
//    after its resume point up to where its successor resumed. A checkpoint
//    outside its writer's range (a superseded attempt's, written after its
//    successor had started) is never resumed from.
//
// File: `lineage` in the checkpoint directory, one entry per line
// ("attempt 2 resumed_after_step 6 from_attempt 1"), replaced durably
// (durable_file.h). Only rank 0 of the current attempt writes it. A
// directory without one (checkpoints written before lineages existed)
// constrains nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace accumulus::engine {

struct LineageEntry {
  int64_t attempt = 0;
  int64_t resumed_after_step = 0;  // 0: a fresh start
  int64_t from_attempt = 0;        // whose checkpoint (0: none)
};

class CheckpointLineage {
 public:
  static constexpr const char* kFileName = "lineage";

  // Reads `dir`/lineage: an empty lineage when there is none, DATA_LOSS
  // naming the line when it does not parse.
  static StatusOr<CheckpointLineage> Read(const std::string& dir);

  // Reads, appends `entry` and replaces the file durably (creating `dir`).
  static Status Append(const std::string& dir, const LineageEntry& entry);

  // The newest attempt recorded above `attempt`, or 0 when none is.
  int64_t NewestAbove(int64_t attempt) const;

  // Whether the checkpoint after `step` written by `attempt` lies on the
  // history the next start continues; when it does not, `why` says so.
  bool Allows(int64_t attempt, int64_t step, std::string* why) const;

  const std::vector<LineageEntry>& entries() const { return entries_; }

 private:
  // Attempt `attempt` owns the checkpoints after `after` up to `upto`.
  struct Range {
    int64_t attempt;
    int64_t after;
    int64_t upto;
  };

  explicit CheckpointLineage(std::vector<LineageEntry> entries);

  std::vector<LineageEntry> entries_;  // in the order they were appended
  std::vector<Range> history_;         // newest first
};

}  // namespace accumulus::engine
