#include "server/job_store.h"

#include <sqlite3.h>

#include <deque>
#include <iterator>
#include <utility>

#include "server/job_state.h"
#include "server/schema_upgrade.h"

namespace accumulus::server {
namespace {

// 2: the API's closed sets are enums (server/schema_upgrade.h reads 1).
constexpr int kSchemaVersion = 2;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY,
  number INTEGER NOT NULL,    -- submission order: one more than any before
  finished INTEGER NOT NULL,  -- 1 once in a terminal state
  job BLOB NOT NULL           -- accumulus.v1.Job
);
CREATE INDEX IF NOT EXISTS jobs_by_number ON jobs (number);
CREATE TABLE IF NOT EXISTS events (
  job_id TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  event BLOB NOT NULL,        -- accumulus.v1.JobEvent
  PRIMARY KEY (job_id, sequence)
) WITHOUT ROWID;
)sql";

// A prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return stmt_; }
  void Bind(int i, const std::string& text) {
    sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void BindBlob(int i, const std::string& bytes) {
    sqlite3_bind_blob(stmt_, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  }
  void Bind(int i, int64_t value) { sqlite3_bind_int64(stmt_, i, value); }
  std::string Blob(int column) {
    const void* data = sqlite3_column_blob(stmt_, column);
    return std::string(static_cast<const char*>(data),
                       static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
};

}  // namespace

StatusOr<std::unique_ptr<JobStore>> JobStore::Open(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    const std::string why = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status::Unavailable("state database " + path + ": " + why);
  }
  std::unique_ptr<JobStore> store(new JobStore(db, path));
  sqlite3_busy_timeout(db, 5000);
  // The first statement reads the file: a garbled or foreign one fails here.
  if (Status s = store->Exec("PRAGMA journal_mode=WAL"); !s.ok()) {
    return Status::DataLoss(s.message() +
                            " (move the file aside to start with an empty state, or restore a "
                            "backup)");
  }
  if (Status s = store->Exec("PRAGMA synchronous=NORMAL"); !s.ok()) return s;
  Statement version(db, "PRAGMA user_version");
  if (!version.ok() || sqlite3_step(version.get()) != SQLITE_ROW) {
    return Status::DataLoss(store->Error("reading the schema version").message());
  }
  const int found = sqlite3_column_int(version.get(), 0);
  if (found != 0 && found != 1 && found != kSchemaVersion) {
    return Status::FailedPrecondition("state database " + path + " has schema version " +
                                      std::to_string(found) + "; this controller reads version " +
                                      std::to_string(kSchemaVersion));
  }
  if (Status s = store->Exec(kSchema); !s.ok()) return s;
  if (found == 1) {
    if (Status s = store->UpgradeFromVersion1(); !s.ok()) return s;
  }
  if (Status s = store->Exec(("PRAGMA user_version=" + std::to_string(kSchemaVersion)).c_str());
      !s.ok()) {
    return s;
  }
  if (Status s = store->Exec("PRAGMA quick_check"); !s.ok()) return Status::DataLoss(s.message());
  return store;
}

JobStore::~JobStore() {
  for (auto& [sql, statement] : prepared_) sqlite3_finalize(statement);
  sqlite3_close(db_);
}

sqlite3_stmt* JobStore::Prepared(const char* sql) {
  auto found = prepared_.find(sql);
  if (found != prepared_.end()) return found->second;
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &statement, nullptr) !=
      SQLITE_OK) {
    sqlite3_finalize(statement);
    return nullptr;
  }
  prepared_.emplace(sql, statement);
  return statement;
}

bool JobStore::Run(sqlite3_stmt* statement) {
  if (statement == nullptr) return false;
  if (sqlite3_step(statement) != SQLITE_DONE) {
    sqlite3_reset(statement);  // keeps the error for sqlite3_errmsg
    return false;
  }
  sqlite3_reset(statement);
  sqlite3_clear_bindings(statement);
  return true;
}

Status JobStore::Exec(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) == SQLITE_OK) return Status::Ok();
  const std::string why = error ? error : sqlite3_errmsg(db_);
  sqlite3_free(error);
  return Status::Internal("state database " + path_ + ": " + why);
}

Status JobStore::Error(const std::string& what) const {
  return Status::Internal("state database " + path_ + ": " + what + ": " + sqlite3_errmsg(db_));
}

Status JobStore::CommitError(const std::string& what) const {
  Status error = Error(what);
  switch (sqlite3_errcode(db_)) {  // the primary code (extended codes are off)
    case SQLITE_FULL:              // the disk, a quota, or RLIMIT_FSIZE
    case SQLITE_IOERR:             // a write or fsync failed
    case SQLITE_BUSY:              // another connection holds the write lock (a backup)
    case SQLITE_LOCKED:
    case SQLITE_READONLY:  // the volume was remounted read-only
    case SQLITE_CANTOPEN:  // the WAL or journal file cannot be made now
    case SQLITE_NOMEM:
    case SQLITE_PROTOCOL:
      return Status::Unavailable(error.message());
    default:
      return error;
  }
}

Status JobStore::Record(const v1::Job& job, const std::vector<const v1::JobEvent*>& events) {
  return Commit({{&job, events}}, {});
}

bool JobStore::WriteChange(const Change& change) {
  const v1::Job& job = *change.job;
  sqlite3_stmt* upsert = Prepared(
      "INSERT INTO jobs (id, number, finished, job) "
      "VALUES (?1, (SELECT IFNULL(MAX(number), 0) + 1 FROM jobs), ?3, ?4) "
      "ON CONFLICT(id) DO UPDATE SET finished = ?3, job = ?4");
  if (upsert == nullptr) return false;
  const std::string snapshot = job.SerializeAsString();
  sqlite3_bind_text(upsert, 1, job.id().data(), static_cast<int>(job.id().size()), SQLITE_STATIC);
  sqlite3_bind_int64(upsert, 3, IsTerminal(job.state()) ? 1 : 0);
  sqlite3_bind_blob(upsert, 4, snapshot.data(), static_cast<int>(snapshot.size()), SQLITE_STATIC);
  if (!Run(upsert)) return false;
  sqlite3_stmt* insert =
      Prepared("INSERT INTO events (job_id, sequence, event) VALUES (?1, ?2, ?3)");
  if (insert == nullptr) return false;
  std::string bytes;
  for (const v1::JobEvent* event : change.events) {
    if (!event->SerializeToString(&bytes)) return false;
    sqlite3_bind_text(insert, 1, job.id().data(), static_cast<int>(job.id().size()), SQLITE_STATIC);
    sqlite3_bind_int64(insert, 2, event->sequence());
    sqlite3_bind_blob(insert, 3, bytes.data(), static_cast<int>(bytes.size()), SQLITE_STATIC);
    if (!Run(insert)) return false;
  }
  return true;
}

bool JobStore::DeleteJob(const std::string& id) {
  sqlite3_stmt* events = Prepared("DELETE FROM events WHERE job_id = ?1");
  sqlite3_stmt* jobs = Prepared("DELETE FROM jobs WHERE id = ?1");
  if (events == nullptr || jobs == nullptr) return false;
  for (sqlite3_stmt* statement : {events, jobs}) {
    sqlite3_bind_text(statement, 1, id.data(), static_cast<int>(id.size()), SQLITE_STATIC);
    if (!Run(statement)) return false;
  }
  return true;
}

Status JobStore::Commit(const std::vector<Change>& changes,
                        const std::vector<std::string>& deletions) {
  if (changes.empty() && deletions.empty()) return Status::Ok();
  // What the error names: the jobs the transaction was about.
  auto about = [&] {
    std::string ids;
    for (const Change& c : changes) ids += (ids.empty() ? "" : ", ") + c.job->id();
    for (const std::string& id : deletions) ids += (ids.empty() ? "deleting " : ", deleting ") + id;
    return ids;
  };
  if (!Run(Prepared("BEGIN"))) return CommitError("recording " + about() + ": BEGIN");
  bool ok = true;
  for (size_t i = 0; ok && i < changes.size(); ++i) ok = WriteChange(changes[i]);
  for (size_t i = 0; ok && i < deletions.size(); ++i) ok = DeleteJob(deletions[i]);
  if (ok && Run(Prepared("COMMIT"))) return Status::Ok();
  const Status error = CommitError("recording " + about() + (ok ? ": COMMIT" : ""));
  // A COMMIT that failed may leave its transaction open (SQLITE_BUSY does,
  // and a full disk may): every later BEGIN would fail with it.
  if (!sqlite3_get_autocommit(db_)) (void)Run(Prepared("ROLLBACK"));
  return error;
}

StatusOr<std::vector<JobStore::StoredJob>> JobStore::Load(size_t keep_events,
                                                          const EventVisitor& each_event) {
  std::vector<StoredJob> out;
  Statement jobs(db_, "SELECT job FROM jobs ORDER BY number");
  if (!jobs.ok()) return Error("loading jobs");
  int rc;
  while ((rc = sqlite3_step(jobs.get())) == SQLITE_ROW) {
    StoredJob stored;
    if (!stored.job.ParseFromString(jobs.Blob(0))) {
      return Status::DataLoss("state database " + path_ + ": a job record does not parse");
    }
    out.push_back(std::move(stored));
  }
  if (rc != SQLITE_DONE) return Error("loading jobs");
  for (StoredJob& stored : out) {
    Statement events(db_, "SELECT event FROM events WHERE job_id = ?1 ORDER BY sequence");
    events.Bind(1, stored.job.id());
    // The newest `keep_events`, in a ring while the rest streams past.
    std::deque<v1::JobEvent> newest;
    while ((rc = sqlite3_step(events.get())) == SQLITE_ROW) {
      v1::JobEvent event;
      if (!event.ParseFromString(events.Blob(0)) || event.sequence() != stored.last_sequence + 1) {
        return Status::DataLoss("state database " + path_ + ": the events of job " +
                                stored.job.id() + " are damaged near sequence " +
                                std::to_string(stored.last_sequence + 1));
      }
      stored.last_sequence = event.sequence();
      if (each_event) each_event(stored.job.id(), event);
      newest.push_back(std::move(event));
      if (keep_events > 0 && newest.size() > keep_events) newest.pop_front();
    }
    stored.events.assign(std::make_move_iterator(newest.begin()),
                         std::make_move_iterator(newest.end()));
    if (rc != SQLITE_DONE) return Error("loading the events of job " + stored.job.id());
  }
  return out;
}

Status JobStore::Delete(const std::vector<std::string>& job_ids) { return Commit({}, job_ids); }

Status JobStore::UpgradeFromVersion1() {
  // Read whole before writing: the rows are rewritten in place.
  std::vector<std::pair<std::string, v1::Job>> jobs;
  Statement read_jobs(db_, "SELECT id, job FROM jobs");
  if (!read_jobs.ok()) return Error("upgrading from schema version 1");
  int rc;
  while ((rc = sqlite3_step(read_jobs.get())) == SQLITE_ROW) {
    v1::Job job;
    if (!job.ParseFromString(read_jobs.Blob(1))) {
      return Status::DataLoss("state database " + path_ + ": a job record does not parse");
    }
    UpgradeClosedSetsFromStrings(&job);
    jobs.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(read_jobs.get(), 0)),
                      std::move(job));
  }
  if (rc != SQLITE_DONE) return Error("upgrading from schema version 1");
  struct StoredEvent {
    std::string job_id;
    int64_t sequence;
    v1::JobEvent event;
  };
  std::vector<StoredEvent> events;
  Statement read_events(db_, "SELECT job_id, sequence, event FROM events");
  if (!read_events.ok()) return Error("upgrading from schema version 1");
  while ((rc = sqlite3_step(read_events.get())) == SQLITE_ROW) {
    StoredEvent stored{reinterpret_cast<const char*>(sqlite3_column_text(read_events.get(), 0)),
                       sqlite3_column_int64(read_events.get(), 1),
                       {}};
    if (!stored.event.ParseFromString(read_events.Blob(2))) {
      return Status::DataLoss("state database " + path_ + ": the events of job " + stored.job_id +
                              " are damaged near sequence " + std::to_string(stored.sequence));
    }
    UpgradeClosedSetsFromStrings(&stored.event);
    events.push_back(std::move(stored));
  }
  if (rc != SQLITE_DONE) return Error("upgrading from schema version 1");

  if (Status s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  bool written = true;
  for (const auto& [id, job] : jobs) {
    Statement update(db_, "UPDATE jobs SET job = ?1 WHERE id = ?2");
    update.BindBlob(1, job.SerializeAsString());
    update.Bind(2, id);
    written = written && update.ok() && sqlite3_step(update.get()) == SQLITE_DONE;
  }
  for (const StoredEvent& stored : events) {
    Statement update(db_, "UPDATE events SET event = ?1 WHERE job_id = ?2 AND sequence = ?3");
    update.BindBlob(1, stored.event.SerializeAsString());
    update.Bind(2, stored.job_id);
    update.Bind(3, stored.sequence);
    written = written && update.ok() && sqlite3_step(update.get()) == SQLITE_DONE;
  }
  if (!written) {
    const Status error = Error("upgrading from schema version 1");
    (void)Exec("ROLLBACK");
    return error;
  }
  return Exec("COMMIT");
}

}  // namespace accumulus::server
