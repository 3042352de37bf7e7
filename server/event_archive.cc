#include "server/event_archive.h"

#include <sqlite3.h>

namespace accumulus::server {

StatusOr<std::unique_ptr<EventArchive>> EventArchive::Open(const std::string& path) {
  sqlite3* db = nullptr;
  if (const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
      rc != SQLITE_OK) {
    const std::string why = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status::Unavailable("state database " + path + " (to read events): " + why);
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* read = nullptr;
  if (sqlite3_prepare_v2(db,
                         "SELECT event FROM events WHERE job_id = ?1 AND sequence > ?2 "
                         "ORDER BY sequence LIMIT ?3",
                         -1, &read, nullptr) != SQLITE_OK) {
    const std::string why = sqlite3_errmsg(db);
    sqlite3_close(db);
    return Status::DataLoss("state database " + path + " (to read events): " + why);
  }
  return std::unique_ptr<EventArchive>(new EventArchive(db, read, path));
}

EventArchive::~EventArchive() {
  {
    MutexLock lock(&mutex_);
    sqlite3_finalize(read_);
  }
  sqlite3_close(db_);
}

StatusOr<std::vector<v1::JobEvent>> EventArchive::Read(const std::string& job_id, int64_t after,
                                                       int max) {
  MutexLock lock(&mutex_);
  sqlite3_reset(read_);
  sqlite3_bind_text(read_, 1, job_id.data(), static_cast<int>(job_id.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int64(read_, 2, after);
  sqlite3_bind_int(read_, 3, max);
  std::vector<v1::JobEvent> events;
  int rc;
  while ((rc = sqlite3_step(read_)) == SQLITE_ROW) {
    const void* blob = sqlite3_column_blob(read_, 0);
    v1::JobEvent event;
    if (!event.ParseFromArray(blob, sqlite3_column_bytes(read_, 0)) ||
        event.sequence() != after + static_cast<int64_t>(events.size()) + 1) {
      sqlite3_reset(read_);
      return Status::DataLoss("state database " + path_ + ": the events of job " + job_id +
                              " are damaged near sequence " +
                              std::to_string(after + static_cast<int64_t>(events.size()) + 1));
    }
    events.push_back(std::move(event));
  }
  const std::string why = rc == SQLITE_DONE ? "" : sqlite3_errmsg(db_);
  sqlite3_reset(read_);
  if (!why.empty()) {
    return Status::Unavailable("state database " + path_ + ": reading the events of job " + job_id +
                               ": " + why);
  }
  return events;
}

}  // namespace accumulus::server
