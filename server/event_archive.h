// The events of every job as the state database holds them, read on a
// connection of their own: what a job's EventLog no longer keeps in memory
// (its oldest events) comes from here when a watcher replays from far back.
//
// The database is the StoreWriter's (WAL: this reader never blocks the
// writer, nor the writer it); every event a log shows was committed first,
// so whatever a log let go of is here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "accumulus/v1/job.pb.h"
#include "common/mutex.h"
#include "common/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace accumulus::server {

class EventArchive {
 public:
  // Opens the state database at `path` (which JobStore::Open made) to read.
  static StatusOr<std::unique_ptr<EventArchive>> Open(const std::string& path);
  ~EventArchive();
  EventArchive(const EventArchive&) = delete;
  EventArchive& operator=(const EventArchive&) = delete;

  // Up to `max` events of `job_id` after sequence number `after`, in order.
  StatusOr<std::vector<v1::JobEvent>> Read(const std::string& job_id, int64_t after, int max)
      EXCLUDES(mutex_);

 private:
  EventArchive(sqlite3* db, sqlite3_stmt* read, std::string path)
      : db_(db), read_(read), path_(std::move(path)) {}

  Mutex mutex_;  // one statement, one reader at a time
  sqlite3* const db_;
  sqlite3_stmt* const read_ GUARDED_BY(mutex_);
  const std::string path_;
};

}  // namespace accumulus::server
