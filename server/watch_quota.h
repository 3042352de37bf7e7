// How many WatchJob streams the controller serves at once.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/mutex.h"
#include "common/status.h"

namespace accumulus::server {

// At most `total` streams, and at most `per_caller` of one caller (a
// token's name): each stream holds memory and a share of the event fan-out,
// and one client — a dashboard reconnecting in a loop, a script that never
// closes its streams — must not take them all from everyone else.
class WatchQuota {
 public:
  // Holds one stream's place until destroyed.
  class Ticket {
   public:
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;

   private:
    friend class WatchQuota;
    Ticket(WatchQuota* quota, std::string caller) : quota_(quota), caller_(std::move(caller)) {}
    WatchQuota* const quota_;
    const std::string caller_;
  };

  // 0: no limit.
  WatchQuota(int total, int per_caller) : total_(total), per_caller_(per_caller) {}

  // A place for a stream of `caller`'s, or RESOURCE_EXHAUSTED naming the
  // limit reached and its flag.
  StatusOr<std::unique_ptr<Ticket>> Take(const std::string& caller) EXCLUDES(mutex_);

 private:
  void Release(const std::string& caller) EXCLUDES(mutex_);

  const int total_;
  const int per_caller_;
  Mutex mutex_;
  int open_ GUARDED_BY(mutex_) = 0;
  std::map<std::string, int> open_by_caller_ GUARDED_BY(mutex_);  // only callers with some
};

}  // namespace accumulus::server
