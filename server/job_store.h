// The controller's durable state in SQLite (WAL): every job's latest
// snapshot and every event of its stream with its sequence number, written
// as they happen and read back whole when a controller starts, so a restart
// loses no job and no event.
//
// Durability: WAL with synchronous=NORMAL survives the controller process
// dying at any point (kill -9); a power loss may drop the last transactions.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "accumulus/v1/job.pb.h"
#include "common/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace accumulus::server {

class JobStore {
 public:
  struct StoredJob {
    v1::Job job;
    // Its newest events (all of them unless Load was told to keep fewer),
    // in sequence order, the last one numbered `last_sequence`.
    std::vector<v1::JobEvent> events;
    int64_t last_sequence = 0;
  };

  // Opens the database at `path`, creating it (and its schema) when missing.
  // A file that is not such a database is DATA_LOSS naming the file.
  static StatusOr<std::unique_ptr<JobStore>> Open(const std::string& path);
  ~JobStore();
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  // One job's snapshot and the next events of its stream.
  struct Change {
    const v1::Job* job;
    std::vector<const v1::JobEvent*> events;
  };

  // The changes, then the deletions (each job with its events), in one
  // transaction: all of it or, on an error naming the jobs, none. The error
  // is UNAVAILABLE when the same transaction may succeed later — the disk or
  // a quota is full, a write failed (I/O), the file is locked or read-only —
  // and INTERNAL when it never will (the records themselves are refused).
  Status Commit(const std::vector<Change>& changes, const std::vector<std::string>& deletions);

  // Commit of one change.
  Status Record(const v1::Job& job, const std::vector<const v1::JobEvent*>& events);

  // Every job, in submission order, with its newest `keep_events` events
  // (0: all). `each_event`, if given, sees every stored event of every job,
  // in order, kept or not.
  using EventVisitor = std::function<void(const std::string& job_id, const v1::JobEvent& event)>;
  StatusOr<std::vector<StoredJob>> Load(size_t keep_events = 0,
                                        const EventVisitor& each_event = nullptr);

  // Commit of deletions (the job manager's retention decides which).
  Status Delete(const std::vector<std::string>& job_ids);

  const std::string& path() const { return path_; }

 private:
  JobStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Status Exec(const char* sql);
  // Rewrites every record of schema version 1 in version 2's terms, in one
  // transaction (server/schema_upgrade.h).
  Status UpgradeFromVersion1();
  // Inside Commit's transaction; false on an error (Error() says which).
  bool WriteChange(const Change& change);
  bool DeleteJob(const std::string& id);
  Status Error(const std::string& what) const;
  // Error(what), UNAVAILABLE when SQLite's last error may pass (see Commit).
  Status CommitError(const std::string& what) const;
  // The statement for `sql`, compiled on first use and kept, reset and
  // unbound: Record runs for every batch of events, and compiling its four
  // statements each time was most of SQLite's share of the controller's CPU.
  sqlite3_stmt* Prepared(const char* sql);
  // Steps a kept statement to completion and resets it; false on an error.
  bool Run(sqlite3_stmt* statement);

  sqlite3* db_;
  const std::string path_;
  std::map<std::string, sqlite3_stmt*> prepared_;
};

}  // namespace accumulus::server
