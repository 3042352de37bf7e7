// What the controller holds of one job besides its protobuf: where its ranks
// run, its event log and how far its numbering got. Plain data, owned by the
// JobLifecycle; every part of the job manager reads and changes it under the
// job manager's mutex.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "accumulus/v1/controller.pb.h"
#include "server/event_log.h"

namespace accumulus::server {

struct JobRecord {
  v1::Job job;
  // Shared with the watch streams reading it: a stream outlives a pruned job.
  std::shared_ptr<EventLog> log;
  // Device slots held, by worker; a worker leaves the map when it reports
  // its ranks ended (or is lost).
  std::map<std::string, std::vector<int>> slots;
  // The rendezvous port taken on rank 0's worker (0: none).
  int rendezvous_port = 0;
  std::string rendezvous_worker;
  // The sequence number of the job's newest event (numbered as appended;
  // the log shows it once durable).
  int64_t last_sequence = 0;
  // The newest attempt counted in accumulus_attempts_failed_total: an
  // attempt is counted once, though a cancel may end it again after it
  // failed (RESTARTING, then CANCELLING).
  int32_t failure_counted_attempt = 0;
};

}  // namespace accumulus::server
