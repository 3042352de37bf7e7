// Places queued jobs on free device slots: FIFO among the jobs the pool can
// hold, gang-scheduled (all of a job's ranks or none), elastic jobs on as
// many devices as are free and split their global batch, each
// data-parallel job with a rendezvous port on its rank 0's worker. Not
// thread-safe: the JobManager holds its mutex around every call.
#pragma once

#include <cstdint>
#include <string>

#include "server/event_recorder.h"
#include "server/job_lifecycle.h"
#include "server/job_metrics.h"
#include "server/job_record.h"
#include "server/worker_registry.h"

namespace accumulus::server {

class Scheduler {
 public:
  Scheduler(JobLifecycle* jobs, WorkerRegistry* workers, EventRecorder* recorder,
            JobMetrics* metrics)
      : jobs_(jobs), workers_(workers), recorder_(recorder), metrics_(metrics) {}

  // Places what fits, in queue order, stopping at the first job that fits
  // the pool but not its free slots now (so it is not starved by smaller
  // jobs behind it); a job larger than the whole pool waits aside, saying
  // so, and blocks nobody. Then updates the pool's gauges.
  void Schedule();
  // The same after a submit, in constant time: the jobs queued before the
  // new one stand where the last Schedule left them (nothing else changed
  // since; every change to slots or the pool schedules in full), so only
  // the new job, last in the queue, is looked at. Submitting n jobs costs
  // O(n), not O(n²).
  void ScheduleSubmitted();

 private:
  enum class Outcome { kPlaced, kAside, kBlocked };
  Outcome Consider(JobRecord* record, int32_t pool, const std::string& sizes);
  // Sends the job's assignments if its ranks fit now.
  bool Place(JobRecord* record);

  JobLifecycle* const jobs_;
  WorkerRegistry* const workers_;
  EventRecorder* const recorder_;
  JobMetrics* const metrics_;
  // Whether the last Schedule stopped at a job that fits the pool but not
  // its free slots: no job behind it is placed until slots change.
  bool blocked_ = false;
};

}  // namespace accumulus::server
