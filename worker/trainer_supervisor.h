// Runs each assigned job in trainer processes it supervises, one per rank: a
// crash, an out-of-memory kill or a cancel ends that job, never the daemon.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "accumulus/v1/worker.pb.h"
#include "common/mutex.h"
#include "worker/path_roots.h"
#include "worker/worker_metrics.h"

namespace accumulus::worker {

struct SupervisorOptions {
  std::string trainer_binary;
  // Named in failure reasons ("rank 1 on worker w2: ...").
  std::string worker_id;
  // The address this worker's ranks bind for collectives.
  std::string advertise_address = "127.0.0.1";
  // Each job gets <work_dir>/<job id>/ for its logs.
  std::string work_dir;
  // Defaults for specs that leave threads unset (both 0: each rank measures
  // its split; see common/rank_threads.h).
  int intra_op_threads = 0;
  int blas_threads = 0;
  // How long a cancelled trainer may take to stop at a window boundary
  // before it is killed.
  int cancel_grace_ms = 10000;
  // A trainer sends step events at most one message per this interval.
  int max_event_delay_ms = 100;
  // Where a spec's paths may lead (resolved: ResolveRoots).
  PathRoots roots;
  // Where trainer processes are counted (null: nowhere; must outlive the
  // supervisor).
  const WorkerMetrics* metrics = nullptr;
  // The OOM kills the kernel counted for this worker's processes so far
  // (OomKills; -1: not known). A trainer killed by SIGKILL while the count
  // grew is reported out_of_memory. Null: never asked.
  std::function<int64_t()> oom_kills;
};

class TrainerSupervisor {
 public:
  // Receives every message for the controller (events and status); called
  // from the supervisor's job threads.
  using Report = std::function<void(v1::WorkerMessage)>;

  TrainerSupervisor(SupervisorOptions options, Report report);
  ~TrainerSupervisor();  // Stops every job (as StopAll) first.

  // Starts one trainer process per assigned rank in the background; reports
  // RUNNING, then the ranks' events, then one terminal status once every
  // rank has exited. A rank that fails stops its siblings here.
  // `trainer_lease` (0: none) is the lease its trainers hold from this
  // daemon (TrainerTask.lease_ms), renewed by RenewLeases().
  void Assign(const v1::Assignment& assignment, std::chrono::milliseconds trainer_lease);
  // Asks the job's trainers to stop (SIGTERM), and kills them (SIGKILL) if
  // they have not stopped after the grace period.
  void Cancel(const std::string& job_id, const std::string& reason) EXCLUDES(mutex_);
  std::vector<std::string> RunningJobs() const EXCLUDES(mutex_);
  // Renews every trainer's lease: called while the worker's own lease from
  // the controller holds, several times per trainer lease.
  void RenewLeases() EXCLUDES(mutex_);
  // The worker's lease lapsed: every trainer is killed now (the controller
  // may already be starting their jobs' next attempts elsewhere). Each job
  // ends FAILED with `reason` and `failure_class` (controller_unreachable,
  // or worker_lost when the daemon itself stalled), reported as its
  // attempt's.
  void Fence(const std::string& reason, v1::FailureClass failure_class) EXCLUDES(mutex_);
  // Stops every job's trainers at their next window boundary (each writes
  // a checkpoint) and waits for all of them to end; each is reported FAILED
  // and preempted, so the controller moves it without spending a restart.
  void StopAll() EXCLUDES(mutex_);

 private:
  struct Job;
  struct RankOutcome;
  void Run(std::shared_ptr<Job> job);
  RankOutcome Supervise(Job* job, size_t index);
  // A rank killed by SIGKILL: when the kernel counted an OOM kill since
  // `job` started, `outcome` says so and is out_of_memory.
  void ExplainOomKill(const Job& job, RankOutcome* outcome) const;
  // SIGTERM to every rank of the job, SIGKILL after the grace period.
  void StopLocked(const std::shared_ptr<Job>& job) REQUIRES(mutex_);
  void Reap();

  const SupervisorOptions options_;
  const Report report_;

  mutable Mutex mutex_;
  CondVar changed_;
  std::map<std::string, std::shared_ptr<Job>> jobs_ GUARDED_BY(mutex_);
  bool shutting_down_ GUARDED_BY(mutex_) = false;  // StopAll began: nothing new starts
  std::vector<std::thread> finished_threads_ GUARDED_BY(mutex_);  // joined by Reap()
};

}  // namespace accumulus::worker
