// Places queued jobs on free device slots: FIFO among the jobs the pool can
// hold, gang-scheduled (all of a job's ranks or none), elastic jobs on as
// many devices as are free and split their global batch, each
// data-parallel job with a rendezvous port on its rank 0's worker. Not
// thread-safe: the JobManager holds its mutex around every call.
#pragma once

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

 private:
  // Sends the job's assignments if its ranks fit now.
  bool Place(JobRecord* record);

  JobLifecycle* const jobs_;
  WorkerRegistry* const workers_;
  EventRecorder* const recorder_;
  JobMetrics* const metrics_;
};

}  // namespace accumulus::server
