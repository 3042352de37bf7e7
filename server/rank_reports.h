// What the trainers' ranks have sent, as the controller needs to know it:
// which events it already has (by each rank's own sequence numbers, so a
// resent event is known by its number alone), the step reports of
// data-parallel ranks waiting for the other ranks' to be merged into one
// step, and so which worker messages may not be acknowledged yet (a report
// waiting in memory is not durable). Plain data with no dependencies; not
// thread-safe: the JobManager holds its mutex around every call.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "accumulus/v1/job.pb.h"

namespace accumulus::server {

class RankReports {
 public:
  // Whether `sequence` of `rank` in `attempt` of the job is new (not
  // numbered, or above what that rank sent before), noting it as received.
  bool TakeNew(const std::string& job_id, int32_t attempt, int32_t rank, int64_t sequence);
  // TakeNew of each rank's number in a stored event (a controller restart).
  void NoteStored(const std::string& job_id, const v1::JobEvent& event);

  // A step report of one rank of a `world_size`-rank job, carried by the
  // worker message `link_sequence`. Returns the step merged over every rank
  // (rank 0's loss and counts, each rank's numbers in `ranks`) once the last
  // rank's report is in; until then the report holds back the
  // acknowledgement of its message.
  std::optional<v1::JobEvent> Merge(const std::string& job_id, int32_t world_size,
                                    const std::string& worker_id, uint64_t link_sequence,
                                    const v1::JobEvent& event);
  // Drops the job's reports waiting for other ranks (its attempt ended):
  // they hold back no acknowledgement any more.
  void DropPending(const std::string& job_id);
  // Forgets the job altogether (pruned).
  void Forget(const std::string& job_id);

  // Of the worker's messages up to `processed`, the highest that no
  // waiting report holds back.
  uint64_t AcknowledgeableUpTo(const std::string& worker_id, uint64_t processed) const;

 private:
  struct Report {
    std::string worker_id;
    v1::StepMetrics step;
    int64_t rank_sequence = 0;
    uint64_t link_sequence = 0;  // of the worker message that carried it
  };
  void Release(const Report& report);

  // By job: the highest rank_sequence received from each (attempt, rank).
  std::map<std::string, std::map<std::pair<int32_t, int32_t>, int64_t>> received_;
  // By job and step: the ranks' reports so far.
  std::map<std::string, std::map<int64_t, std::vector<Report>>> pending_;
  // By worker (across its sessions): the link sequences of waiting reports.
  std::map<std::string, std::multiset<uint64_t>> held_;
};

}  // namespace accumulus::server
