// The controller's end of the worker link (accumulus.v1.WorkerLink): one
// bidirectional stream per connected worker. It echoes each heartbeat (the
// echo renews the worker's lease) and closes the link of a worker it has not
// heard from for `lost_after_ms`, which declares the worker lost. A link
// that ends sooner (it broke) leaves the worker's ranks their attempt and
// slots until that long after the last message it sent, for it to
// reconnect to (JobManager::WorkerGone); by then their leases have made
// them stop.
//
// The link is acknowledged (worker/controller_link.h): once what a numbered
// message changed is durable (JobManager::RecordMessage runs the ack then)
// it sends LinkAck with the highest number up to which everything is (less
// a data-parallel step report still waiting for the other ranks:
// JobManager::AcknowledgeableUpTo), and the same number with each
// heartbeat's echo and in Registered. It keeps, per worker
// and across its sessions, the highest number processed in the worker's
// link epoch: a resent status at or below it is not applied again (resent
// events are known by their trainer's number, JobEvent.rank_sequence, which
// also holds across a controller restart; a resent status after a restart
// is applied again, which changes nothing: it restates how an attempt's
// ranks on that worker are).
//
// A worker id belongs to one run of a worker daemon at a time: a second
// daemon registering under an id whose link is live is refused, instead of
// taking over the first one's jobs and slots.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>

#include "accumulus/v1/worker.grpc.pb.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/awake_clock.h"
#include "server/job_manager.h"

namespace accumulus::server {

class LinkReactor;

class WorkerLinkService final : public v1::WorkerLink::CallbackService {
 public:
  // `require_client_certificate`: a link whose peer presented no
  // certificate verified by the worker CA is refused (UNAUTHENTICATED); off
  // only when the controller serves plaintext (--insecure).
  // Silence is measured by `clock`.
  WorkerLinkService(JobManager* jobs, AwakeClock* clock, int heartbeat_interval_ms,
                    int lost_after_ms, bool require_client_certificate)
      : jobs_(jobs),
        clock_(clock),
        heartbeat_interval_ms_(heartbeat_interval_ms),
        lost_after_ms_(lost_after_ms),
        require_client_certificate_(require_client_certificate) {}

  grpc::ServerBidiReactor<v1::WorkerMessage, v1::ControllerMessage>* Connect(
      grpc::CallbackServerContext* context) override;

  // Closes the links of workers silent for lost_after_ms. Called
  // periodically (the controller's housekeeper).
  void CloseSilentLinks();
  // Closes every link (UNAVAILABLE, `reason`): the controller is stopping,
  // and its workers reconnect to the next one.
  void CloseAllLinks(const std::string& reason);

 private:
  friend class LinkReactor;
  // `reactor` ended; `worker_id`: the id it registered (or tried to), "" if none.
  void Forget(LinkReactor* reactor, const std::string& worker_id) EXCLUDES(mutex_);

  // Makes `reactor`, from `peer`, the link of `worker_id` in `epoch` (one
  // run of a worker daemon). ALREADY_EXISTS while a link of another run
  // holds the id and has not been silent for lost_after_ms: a second daemon
  // with the same --worker-id. The same run reconnecting takes the id over
  // (its old link is dead to it), as does a new run once the old link is
  // silent (a node that came back while its old connection hung).
  Status ClaimWorkerId(const std::string& worker_id, uint64_t epoch, const std::string& peer,
                       LinkReactor* reactor) EXCLUDES(mutex_);

  // The highest sequence of the worker's `epoch` processed (0: none).
  uint64_t ProcessedUpTo(const std::string& worker_id, uint64_t epoch) const EXCLUDES(mutex_);
  // Whether `sequence` of the worker's `epoch` was processed before.
  bool Processed(const std::string& worker_id, uint64_t epoch, uint64_t sequence) const
      EXCLUDES(mutex_);
  void MarkProcessed(const std::string& worker_id, uint64_t epoch, uint64_t sequence)
      EXCLUDES(mutex_);
  // `sequence` and everything processed before it is durable; returns the
  // highest such sequence.
  uint64_t MarkDurable(const std::string& worker_id, uint64_t epoch, uint64_t sequence)
      EXCLUDES(mutex_);
  // The highest durable sequence of the worker's `epoch` (0: none).
  uint64_t DurableUpTo(const std::string& worker_id, uint64_t epoch) const EXCLUDES(mutex_);

  struct LinkProgress {
    uint64_t epoch = 0;
    uint64_t processed = 0;  // read and handed to the job manager
    uint64_t durable = 0;    // and recorded in the store
  };
  // The worker's progress in `epoch` (reset for a new epoch).
  LinkProgress& ProgressLocked(const std::string& worker_id, uint64_t epoch) REQUIRES(mutex_);

  JobManager* const jobs_;
  AwakeClock* const clock_;
  const int heartbeat_interval_ms_;
  const int lost_after_ms_;
  const bool require_client_certificate_;
  mutable Mutex mutex_;
  std::set<LinkReactor*> live_ GUARDED_BY(mutex_);  // each removes itself in OnDone
  std::map<std::string, LinkProgress> progress_ GUARDED_BY(mutex_);
  // Each registered worker id's link (ClaimWorkerId), until it ends.
  struct IdHolder {
    LinkReactor* reactor;  // in live_
    uint64_t epoch;
    std::string peer;
  };
  std::map<std::string, IdHolder> holders_ GUARDED_BY(mutex_);
};

}  // namespace accumulus::server
