#include "server/job_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/clock.h"
#include "common/job_spec.h"
#include "server/job_state.h"
#include "server/placement.h"

namespace accumulus::server {
namespace {

v1::JobEvent StateEvent(v1::JobState state, const std::string& reason,
                        const std::string& worker_id) {
  v1::JobEvent event;
  event.mutable_state()->set_state(state);
  event.mutable_state()->set_reason(reason);
  event.mutable_state()->set_worker_id(worker_id);
  return event;
}

std::string DeviceName(const v1::Device& d) { return d.kind() + ":" + std::to_string(d.index()); }

}  // namespace

int32_t JobManager::WorkerRecord::free_slots() const {
  return static_cast<int32_t>(std::count(slot_jobs.begin(), slot_jobs.end(), std::string()));
}

StatusOr<v1::Job> JobManager::Submit(const v1::JobSpec& input) {
  StatusOr<v1::JobSpec> spec = NormalizeJobSpec(input);
  StatusOr<v1::BatchPlan> batch = spec.ok() ? ResolveBatchPlan(*spec) : spec.status();
  if (!batch.ok()) {
    metrics_->jobs_rejected->Increment();
    return batch.status();
  }
  v1::Job job;
  {
    MutexLock lock(&mutex_);
    const std::string id = "job-" + std::to_string(next_job_number_++);
    JobRecord& record = jobs_[id];
    record.log = std::make_shared<EventLog>(id);
    record.job.set_id(id);
    record.job.set_attempt(1);
    *record.job.mutable_spec() = *spec;
    *record.job.mutable_batch() = *batch;
    *record.job.mutable_submitted_at() = Now();
    record.job.set_steps_total(TotalSteps(*spec, *batch));
    job_order_.push_back(id);
    queue_.push_back(id);
    SetStateLocked(&record, v1::JOB_STATE_QUEUED,
                   "waiting for " + std::to_string(batch->devices()) + " free device slot(s)");
    ScheduleLocked();
    job = record.job;
  }
  metrics_->jobs_submitted->Increment();
  spdlog::info("job {} submitted: micro_batch {} × accumulation_steps {} × devices {} = {}",
               job.id(), job.batch().micro_batch(), job.batch().accumulation_steps(),
               job.batch().devices(), job.batch().global_batch());
  return job;
}

StatusOr<v1::Job> JobManager::Get(const std::string& job_id) const {
  MutexLock lock(&mutex_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return Status::NotFound("no job \"" + job_id + "\"");
  return it->second.job;
}

std::vector<v1::Job> JobManager::List() const {
  MutexLock lock(&mutex_);
  std::vector<v1::Job> out;
  for (const auto& id : job_order_) out.push_back(jobs_.at(id).job);
  return out;
}

StatusOr<v1::Job> JobManager::Cancel(const std::string& job_id, const std::string& reason) {
  v1::Job job;
  {
    MutexLock lock(&mutex_);
    JobRecord* record = FindLocked(job_id);
    if (record == nullptr) return Status::NotFound("no job \"" + job_id + "\"");
    const v1::JobState state = record->job.state();
    const std::string why = reason.empty() ? "cancelled by request" : reason;
    if (IsTerminal(state)) {
      return Status::FailedPrecondition("job " + job_id + " already ended " + StateLabel(state));
    }
    if (state == v1::JOB_STATE_QUEUED) {
      queue_.erase(std::remove(queue_.begin(), queue_.end(), job_id), queue_.end());
      SetStateLocked(record, v1::JOB_STATE_CANCELLED, why);
      ScheduleLocked();  // a job behind it may fit now
    } else if (state != v1::JOB_STATE_CANCELLING) {
      SetStateLocked(record, v1::JOB_STATE_CANCELLING, why);
      SendCancelLocked(*record, why);
    }
    job = record->job;
  }
  return job;
}

StatusOr<v1::Job> JobManager::Resume(const std::string& job_id) {
  v1::Job job;
  {
    MutexLock lock(&mutex_);
    JobRecord* record = FindLocked(job_id);
    if (record == nullptr) return Status::NotFound("no job \"" + job_id + "\"");
    v1::Job& current = record->job;
    if (current.state() != v1::JOB_STATE_CANCELLED && current.state() != v1::JOB_STATE_FAILED) {
      return Status::FailedPrecondition("job " + job_id + " is " + StateLabel(current.state()) +
                                        ": only a cancelled or failed job can be resumed");
    }
    finished_.erase(std::remove(finished_.begin(), finished_.end(), job_id), finished_.end());
    v1::Attempt* ended = current.add_attempts();
    ended->set_number(current.attempt());
    *ended->mutable_ended_at() = current.finished_at();
    ended->set_reason(StateLabel(current.state()) + ": " + current.reason());
    ended->set_last_step(current.steps_done());
    current.set_attempt(current.attempt() + 1);
    current.set_steps_done(0);
    current.clear_finished_at();
    current.clear_worker_id();
    const std::string from = current.spec().checkpoint().dir().empty()
                                 ? "from the start (the job has no checkpoint.dir)"
                                 : "from its newest checkpoint";
    queue_.push_back(job_id);
    SetStateLocked(
        record, v1::JOB_STATE_QUEUED,
        "resumed by request: attempt " + std::to_string(current.attempt()) + " resumes " + from);
    ScheduleLocked();
    UpdateGaugesLocked();
    job = record->job;
  }
  return job;
}

StatusOr<std::shared_ptr<EventLog>> JobManager::Events(const std::string& job_id) const {
  MutexLock lock(&mutex_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return Status::NotFound("no job \"" + job_id + "\"");
  return it->second.log;
}

std::vector<v1::WorkerInfo> JobManager::Workers() const {
  MutexLock lock(&mutex_);
  std::vector<v1::WorkerInfo> out;
  for (const auto& [id, w] : workers_) {
    v1::WorkerInfo info;
    info.set_id(id);
    info.set_hostname(w.registration.hostname());
    *info.mutable_devices() = w.registration.devices();
    info.set_free_slots(w.free_slots());
    for (const auto& job : w.jobs) info.add_job_ids(job);
    for (const auto& holder : w.slot_jobs) info.add_device_jobs(holder);
    out.push_back(std::move(info));
  }
  return out;
}

Status JobManager::Recover(std::chrono::milliseconds worker_grace) {
  if (store_ == nullptr) return Status::Ok();
  StatusOr<std::vector<JobStore::StoredJob>> stored = store_->Load();
  if (!stored.ok()) return stored.status();
  MutexLock lock(&mutex_);
  const auto deadline = std::chrono::steady_clock::now() + worker_grace;
  for (JobStore::StoredJob& s : *stored) {
    const std::string id = s.job.id();
    JobRecord& record = jobs_[id];
    record.job = std::move(s.job);
    const v1::JobState state = record.job.state();
    // What each rank's trainer had sent, so a resent event is known as such.
    for (const v1::JobEvent& e : s.events) {
      NoteReceivedLocked(&record, e.attempt(), e.rank(), e.rank_sequence());
      if (e.has_step()) {
        for (const v1::RankStepMetrics& r : e.step().ranks()) {
          NoteReceivedLocked(&record, e.attempt(), r.rank(), r.rank_sequence());
        }
      }
    }
    record.last_sequence = s.events.empty() ? 0 : s.events.back().sequence();
    record.log = std::make_shared<EventLog>(id);
    record.log->Restore(std::move(s.events), IsTerminal(state));
    job_order_.push_back(id);
    if (IsTerminal(state)) finished_.push_back(id);
    next_job_number_ = std::max<int64_t>(next_job_number_, JobNumber(id) + 1);
    metrics_->jobs->WithLabels({StateLabel(state)})->Increment();
    if (state == v1::JOB_STATE_QUEUED) {
      queue_.push_back(id);
    } else if (!IsTerminal(state)) {
      // Placed: its ranks run on (or were lost with) their workers, which
      // claim them when they reconnect.
      for (const v1::RankPlacement& p : record.job.placements()) {
        record.slots[p.worker_id()].push_back(p.slot());
        awaited_workers_.emplace(p.worker_id(), deadline);
      }
      record.rendezvous_port = record.job.rendezvous_port();
      if (record.job.placements_size() > 0) {
        record.rendezvous_worker = record.job.placements(0).worker_id();
      }
    }
  }
  UpdateGaugesLocked();
  spdlog::info("recovered {} job(s) from {}; waiting for {} worker(s) to reconnect", stored->size(),
               store_->path(), awaited_workers_.size());
  return Status::Ok();
}

void JobManager::Expire() {
  {
    MutexLock lock(&mutex_);
    ReleaseExpiredFencesLocked();
    PruneFinishedLocked();
    const auto now = std::chrono::steady_clock::now();
    bool lost_any = false;
    for (auto it = awaited_workers_.begin(); it != awaited_workers_.end();) {
      if (now < it->second) {
        ++it;
        continue;
      }
      const std::string worker_id = it->first;
      it = awaited_workers_.erase(it);
      for (auto& [job_id, record] : jobs_) {
        if (IsTerminal(record.job.state()) || record.slots.count(worker_id) == 0) continue;
        LoseRanksLocked(
            &record, worker_id,
            "worker " + worker_id + " did not reconnect after the controller restarted");
        lost_any = true;
      }
    }
    if (lost_any) {
      ScheduleLocked();
      UpdateGaugesLocked();
    }
  }
}

void JobManager::ReleaseExpiredFencesLocked() {
  const auto now = std::chrono::steady_clock::now();
  bool released = false;
  for (auto& [job_id, record] : jobs_) {
    std::vector<std::string> expired;
    for (const auto& [worker_id, until] : record.fences) {
      if (until <= now) expired.push_back(worker_id);
    }
    for (const std::string& worker_id : expired) {
      spdlog::info("job {}: the ranks on lost worker {} are past their lease; their slots are free",
                   job_id, worker_id);
      WorkerLeftJobLocked(&record, worker_id);
      RequeueIfStoppedLocked(&record);
      released = true;
    }
  }
  if (released) {
    ScheduleLocked();
    UpdateGaugesLocked();
  }
}

void JobManager::PruneFinishedLocked() {
  if (keep_finished_ <= 0 || static_cast<int64_t>(finished_.size()) <= keep_finished_) return;
  std::vector<std::string> pruned;
  // Candidates: all but the newest keep_finished_.
  int64_t older = static_cast<int64_t>(finished_.size()) - keep_finished_;
  for (auto it = finished_.begin(); it != finished_.end() && older-- > 0;) {
    auto job = jobs_.find(*it);
    // A job whose ranks are still stopping holds their slots: it stays until
    // they report (or are lost), or its slots would stay held for ever.
    if (job != jobs_.end() && !job->second.slots.empty()) {
      ++it;
      continue;
    }
    const std::string id = *it;
    it = finished_.erase(it);
    if (job == jobs_.end()) continue;
    metrics_->jobs->WithLabels({StateLabel(job->second.job.state())})->Decrement();
    jobs_.erase(job);  // a watcher still streaming holds the log itself
    job_order_.erase(std::remove(job_order_.begin(), job_order_.end(), id), job_order_.end());
    pruned.push_back(id);
  }
  if (pruned.empty()) return;
  unflushed_deletions_.insert(unflushed_deletions_.end(), pruned.begin(), pruned.end());
  FlushLocked();
}

uint64_t JobManager::WorkerConnected(const v1::Register& registration, WorkerSender sender) {
  uint64_t session = 0;
  {
    MutexLock lock(&mutex_);
    const std::string& id = registration.worker_id();
    const std::set<std::string> still_running(registration.running_job_ids().begin(),
                                              registration.running_job_ids().end());
    WorkerRecord& worker = workers_[id];
    // After a controller restart, the jobs recovered with ranks here are this
    // worker's previous session.
    if (awaited_workers_.erase(id) > 0) {
      for (auto& [job_id, record] : jobs_) {
        if (IsTerminal(record.job.state()) || record.slots.count(id) == 0) continue;
        worker.jobs.insert(job_id);
        if (record.rendezvous_port != 0 && record.rendezvous_worker == id) {
          worker.ports_in_use.insert(record.rendezvous_port);
        }
      }
    }
    for (const v1::DroppedMessages& d : registration.dropped()) {
      JobRecord* record = FindLocked(d.job_id());
      if (record == nullptr) continue;
      v1::JobEvent warning;
      warning.mutable_log()->set_level(v1::LogMessage::LEVEL_WARNING);
      warning.mutable_log()->set_text("worker " + id + " dropped " + std::to_string(d.count()) +
                                      " message(s) of this job while the controller was "
                                      "unreachable (its buffer was full): steps may be missing "
                                      "from this stream");
      AppendLocked(record, std::move(warning), /*closes=*/false);
    }
    // Ranks of a previous session that the worker no longer runs are lost.
    for (const std::string& job_id : std::set<std::string>(worker.jobs)) {
      if (still_running.count(job_id) > 0) continue;
      LoseRanksLocked(FindLocked(job_id), id, "worker " + id + " reconnected without the job");
    }
    worker.registration = registration;
    worker.session = session = next_session_++;
    worker.sender = std::move(sender);
    // Ranks it still runs that are no longer placed there (the job moved on,
    // restarted elsewhere or ended while the worker was away) must stop: two
    // attempts of one job must never train (and checkpoint) at once.
    for (const std::string& job_id : still_running) {
      if (worker.jobs.count(job_id) > 0) continue;
      worker.draining.insert(job_id);
      v1::ControllerMessage cancel;
      cancel.mutable_cancel()->set_job_id(job_id);
      cancel.mutable_cancel()->set_reason("the job is no longer placed on worker " + id);
      worker.sender(cancel);
    }
    // Ranks fenced when its previous session was lost: reported stopped,
    // they free their slots now; still running, they are stopped and stay
    // fenced (their slots held) until the worker reports them ended.
    for (auto& [job_id, record] : jobs_) {
      auto fence = record.fences.find(id);
      if (fence == record.fences.end()) continue;
      if (still_running.count(job_id) == 0) {
        WorkerLeftJobLocked(&record, id);
        RequeueIfStoppedLocked(&record);
        continue;
      }
      fence->second = std::chrono::steady_clock::time_point::max();
      worker.jobs.insert(job_id);
      if (worker.draining.insert(job_id).second) {
        v1::ControllerMessage cancel;
        cancel.mutable_cancel()->set_job_id(job_id);
        cancel.mutable_cancel()->set_reason("worker " + id +
                                            " was declared lost; this attempt is over");
        worker.sender(cancel);
      }
    }
    // The jobs it still runs keep their slots.
    worker.slot_jobs.assign(static_cast<size_t>(registration.devices_size()), "");
    for (const std::string& job_id : worker.jobs) {
      for (int slot : FindLocked(job_id)->slots[id]) {
        if (slot < registration.devices_size())
          worker.slot_jobs[static_cast<size_t>(slot)] = job_id;
      }
    }
    ScheduleLocked();
    UpdateGaugesLocked();
  }
  spdlog::info("worker {} connected with {} device slot(s)", registration.worker_id(),
               registration.devices_size());
  return session;
}

void JobManager::WorkerGone(const std::string& worker_id, uint64_t session,
                            const std::string& reason,
                            std::chrono::steady_clock::time_point fence_until) {
  {
    MutexLock lock(&mutex_);
    auto it = workers_.find(worker_id);
    if (it == workers_.end() || it->second.session != session) return;  // replaced
    // A copy: losing ranks takes the job out of the worker's set.
    for (const std::string& job_id : std::set<std::string>(it->second.jobs)) {
      JobRecord* record = FindLocked(job_id);
      if (record == nullptr || record->slots.count(worker_id) == 0) continue;
      // The attempt is over, but its ranks there are not known to have
      // stopped: their slots stay held (so the job is not placed again)
      // until their leases have lapsed.
      const std::string why = "worker " + worker_id + " lost: " + reason;
      if (fence_until <= std::chrono::steady_clock::now()) {
        LoseRanksLocked(record, worker_id, why);
        continue;
      }
      record->fences[worker_id] = fence_until;
      EndJobEarlyLocked(record, v1::JOB_STATE_FAILED, why, /*permanent=*/false);
    }
    workers_.erase(it);
    ScheduleLocked();
    UpdateGaugesLocked();
  }
  spdlog::warn("worker {} disconnected: {}", worker_id, reason);
}

void JobManager::RecordEvents(const std::string& worker_id, const v1::TrainerEvents& events,
                              uint64_t link_sequence) {
  MutexLock lock(&mutex_);
  RecordEventsLocked(worker_id, events, link_sequence);
}

uint64_t JobManager::AcknowledgeableUpTo(const std::string& worker_id, uint64_t processed) const {
  MutexLock lock(&mutex_);
  auto held = held_link_sequences_.find(worker_id);
  if (held == held_link_sequences_.end() || held->second.empty()) return processed;
  return std::min(processed, *held->second.begin() - 1);
}

void JobManager::RecordEventsLocked(const std::string& worker_id, const v1::TrainerEvents& events,
                                    uint64_t link_sequence) {
  JobRecord* record = FindLocked(events.job_id());
  if (record == nullptr) return;  // pruned
  if (IsStaleLocked(*record, worker_id, events.attempt())) {
    // Untagged late events (nothing to file them under) are dropped.
    if (events.attempt() > 0) RecordStaleLocked(record, events);
    return;
  }
  // The worker's batch is recorded in one transaction.
  batching_ = true;
  for (const v1::JobEvent& event : events.events()) {
    if (!TakeNewLocked(record, record->job.attempt(), event)) continue;
    if (event.has_step() && record->job.batch().devices() > 1) {
      MergeStepLocked(record, worker_id, link_sequence, event);
    } else if (event.has_step()) {
      RecordStepLocked(record, event);
    } else {
      // The trainer's plan is authoritative (file data sets are sized only
      // once read).
      if (event.has_runtime() && event.runtime().rank() == 0) {
        *record->job.mutable_runtime() = event.runtime();
        record->job.set_steps_total(event.runtime().steps_total());
        // A resumed attempt continues after its checkpoint's step. Steps
        // the last attempt trained and checkpointed but whose events died
        // with it (a killed worker's unsent buffer) are said to be so.
        const int64_t resumed = event.runtime().resumed_from_step();
        const int64_t reported =
            record->job.attempts_size() > 0 ? record->job.attempts().rbegin()->last_step() : 0;
        if (resumed > reported) {
          v1::JobEvent lost;
          lost.mutable_log()->set_level(v1::LogMessage::LEVEL_WARNING);
          lost.mutable_log()->set_text(
              "steps " + std::to_string(reported + 1) + " to " + std::to_string(resumed) +
              " were trained and checkpointed by attempt " +
              std::to_string(record->job.attempt() - 1) + ", but their metrics were lost with it");
          AppendLocked(record, std::move(lost), /*closes=*/false);
        }
        record->job.set_steps_done(resumed);
        // micro_batch: auto is decided there too.
        if (event.runtime().batch().micro_batch() > 0) {
          *record->job.mutable_batch() = event.runtime().batch();
        }
      }
      // The batch plan is the controller's: a rank that had to change its
      // split says so, and the plan shows the smallest micro-batch a rank
      // runs.
      if (event.has_split() && event.split().micro_batch() > 0 &&
          (record->job.batch().micro_batch() == 0 ||
           event.split().micro_batch() < record->job.batch().micro_batch())) {
        record->job.mutable_batch()->set_micro_batch(event.split().micro_batch());
        record->job.mutable_batch()->set_accumulation_steps(event.split().accumulation_steps());
      }
      v1::JobEvent copy = event;
      copy.clear_sequence();
      copy.set_attempt(record->job.attempt());
      AppendLocked(record, std::move(copy), /*closes=*/false);
    }
  }
  batching_ = false;
  FlushLocked();
}

void JobManager::RecordStatus(const std::string& worker_id, const v1::AssignmentStatus& status) {
  MutexLock lock(&mutex_);
  RecordStatusLocked(worker_id, status);
}

void JobManager::RecordStatusLocked(const std::string& worker_id,
                                    const v1::AssignmentStatus& status) {
  // A stale rank of the job (one it had stopped) ended: the job may be
  // placed on this worker again, once this status has been read as the
  // old attempt's (below, it changes nothing).
  auto worker = workers_.find(worker_id);
  const bool drained = worker != workers_.end() && IsTerminal(status.state()) &&
                       worker->second.draining.erase(status.job_id()) > 0;
  JobRecord* record = FindLocked(status.job_id());
  if (record != nullptr && status.attempt() > 0 && status.attempt() != record->job.attempt()) {
    RecordStaleStatusLocked(record, worker_id, status);
    if (drained) {
      ScheduleLocked();
      UpdateGaugesLocked();
    }
    return;
  }
  // A rank not (or no longer) placed here changes nothing else.
  const bool placed_here = record != nullptr && record->slots.count(worker_id) > 0;
  const v1::JobState current = placed_here ? record->job.state() : v1::JOB_STATE_UNSPECIFIED;
  if (placed_here && status.state() == v1::JOB_STATE_RUNNING) {
    if (current == v1::JOB_STATE_STARTING) {
      *record->job.mutable_started_at() = Now();
      SetStateLocked(record, v1::JOB_STATE_RUNNING, "");
    }
  } else if (placed_here && IsTerminal(status.state())) {
    WorkerLeftJobLocked(record, worker_id);
    if (current == v1::JOB_STATE_RESTARTING) {
      // A rank of the failed attempt stopped, whatever it says.
      RequeueIfStoppedLocked(record);
    } else if (status.state() != v1::JOB_STATE_SUCCEEDED) {
      // A cancel request keeps its own reason when the ranks stopped for it.
      const bool cancelled =
          current == v1::JOB_STATE_CANCELLING && status.state() == v1::JOB_STATE_CANCELLED;
      EndJobEarlyLocked(record, status.state(), cancelled ? record->job.reason() : status.reason(),
                        status.permanent());
      RequeueIfStoppedLocked(record);
    } else if (record->slots.empty() && !IsTerminal(record->job.state())) {
      // Every rank finished (even if a cancel arrived too late to matter).
      SetStateLocked(record, v1::JOB_STATE_SUCCEEDED, "");
    }
    ScheduleLocked();
    UpdateGaugesLocked();
  } else if (drained) {
    ScheduleLocked();
    UpdateGaugesLocked();
  }
}

void JobManager::RecordStaleStatusLocked(JobRecord* record, const std::string& worker_id,
                                         const v1::AssignmentStatus& status) {
  if (!IsTerminal(status.state())) return;
  v1::JobEvent ended;
  ended.set_attempt(status.attempt());
  ended.set_stale(true);
  ended.mutable_log()->set_level(v1::LogMessage::LEVEL_INFO);
  ended.mutable_log()->set_text("attempt " + std::to_string(status.attempt()) + " on worker " +
                                worker_id + " ended " + StateLabel(status.state()) +
                                (status.reason().empty() ? "" : ": " + status.reason()));
  AppendLocked(record, std::move(ended), /*closes=*/false);
  // Its ranks there held the job's slots (a fence): they are free now.
  if (record->slots.count(worker_id) > 0) {
    WorkerLeftJobLocked(record, worker_id);
    RequeueIfStoppedLocked(record);
    ScheduleLocked();
    UpdateGaugesLocked();
  }
}

bool JobManager::IsStaleLocked(const JobRecord& record, const std::string& worker_id,
                               int32_t attempt) const {
  if (attempt > 0 && attempt != record.job.attempt()) return true;
  const v1::JobState state = record.job.state();
  return record.slots.count(worker_id) == 0 || record.fences.count(worker_id) > 0 ||
         IsTerminal(state) || state == v1::JOB_STATE_RESTARTING;
}

void JobManager::RecordStaleLocked(JobRecord* record, const v1::TrainerEvents& events) {
  const int32_t attempt = events.attempt();
  batching_ = true;
  for (const v1::JobEvent& event : events.events()) {
    if (!TakeNewLocked(record, attempt, event)) continue;
    v1::JobEvent copy = event;
    copy.clear_sequence();
    copy.set_attempt(attempt);
    copy.set_stale(true);
    if (copy.has_step()) copy.mutable_step()->set_attempt(attempt);
    AppendLocked(record, std::move(copy), /*closes=*/false);
  }
  batching_ = false;
  FlushLocked();
}

JobManager::JobRecord* JobManager::FindLocked(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : &it->second;
}

void JobManager::SetStateLocked(JobRecord* record, v1::JobState state, const std::string& reason) {
  v1::Job& job = record->job;
  if (job.state() != v1::JOB_STATE_UNSPECIFIED) {
    metrics_->jobs->WithLabels({StateLabel(job.state())})->Decrement();
  }
  metrics_->jobs->WithLabels({StateLabel(state)})->Increment();
  job.set_state(state);
  job.set_reason(reason);
  const bool terminal = IsTerminal(state);
  if (terminal) {
    finished_.push_back(job.id());
    *job.mutable_finished_at() = Now();
    ClearPendingStepsLocked(record);
    // Per-job series end with the job.
    const std::vector<std::string> labels{job.id()};
    metrics_->job_steps->Remove(labels);
    metrics_->job_loss->Remove(labels);
    metrics_->job_samples_per_second->Remove(labels);
    metrics_->job_effective_batch->Remove(labels);
    for (int32_t rank = 0; rank < std::max(1, job.batch().devices()); ++rank) {
      const std::vector<std::string> rank_labels{job.id(), std::to_string(rank)};
      for (auto* family : {metrics_->job_tensor_bytes, metrics_->job_tensor_peak_bytes,
                           metrics_->job_process_rss_bytes, metrics_->job_allocator_reserved_bytes,
                           metrics_->job_allocator_retries}) {
        family->Remove(rank_labels);
      }
    }
    metrics_->job_step_seconds->Remove(labels);
    spdlog::info("job {} {}{}{}", job.id(), StateLabel(state), reason.empty() ? "" : ": ", reason);
  }
  AppendLocked(record, StateEvent(state, reason, job.worker_id()), terminal);
}

void JobManager::WorkerLeftJobLocked(JobRecord* record, const std::string& worker_id) {
  const std::string& id = record->job.id();
  auto worker = workers_.find(worker_id);
  if (worker != workers_.end()) {
    worker->second.jobs.erase(id);
    for (std::string& holder : worker->second.slot_jobs) {
      if (holder == id) holder.clear();
    }
  }
  record->slots.erase(worker_id);
  record->fences.erase(worker_id);
  if (record->slots.empty() && record->rendezvous_port != 0) {
    auto owner = workers_.find(record->rendezvous_worker);
    if (owner != workers_.end()) owner->second.ports_in_use.erase(record->rendezvous_port);
    record->rendezvous_port = 0;
  }
}

void JobManager::LoseRanksLocked(JobRecord* record, const std::string& worker_id,
                                 const std::string& reason) {
  WorkerLeftJobLocked(record, worker_id);
  EndJobEarlyLocked(record, v1::JOB_STATE_FAILED, reason, /*permanent=*/false);
  RequeueIfStoppedLocked(record);
}

void JobManager::EndJobEarlyLocked(JobRecord* record, v1::JobState state, const std::string& reason,
                                   bool permanent) {
  v1::Job& job = record->job;
  if (IsTerminal(job.state()) || job.state() == v1::JOB_STATE_RESTARTING) return;
  const bool cancelling = job.state() == v1::JOB_STATE_CANCELLING;
  // The other ranks cannot finish without this one.
  SendCancelLocked(*record, "another rank of the job ended: " + reason);
  ClearPendingStepsLocked(record);
  const int32_t restarts_used = job.attempt() - 1;
  if (!cancelling && state == v1::JOB_STATE_FAILED && !permanent &&
      restarts_used < job.spec().max_restarts()) {
    v1::Attempt* ended = job.add_attempts();
    ended->set_number(job.attempt());
    *ended->mutable_ended_at() = Now();
    ended->set_reason(reason);
    ended->set_last_step(job.steps_done());
    metrics_->job_restarts->Increment();
    SetStateLocked(record, v1::JOB_STATE_RESTARTING,
                   "attempt " + std::to_string(job.attempt()) + " failed (" + reason +
                       "); restart " + std::to_string(restarts_used + 1) + " of " +
                       std::to_string(job.spec().max_restarts()));
    return;
  }
  SetStateLocked(record, cancelling ? v1::JOB_STATE_CANCELLED : state,
                 cancelling ? job.reason() : reason);
}

void JobManager::RequeueIfStoppedLocked(JobRecord* record) {
  v1::Job& job = record->job;
  if (job.state() != v1::JOB_STATE_RESTARTING || !record->slots.empty()) return;
  job.set_attempt(job.attempt() + 1);
  // Until its plan says where it resumes (see RecordEvents).
  job.set_steps_done(0);
  job.clear_worker_id();
  const std::string from = job.spec().checkpoint().dir().empty()
                               ? "from the start (the job has no checkpoint.dir)"
                               : "from its newest checkpoint";
  SetStateLocked(
      record, v1::JOB_STATE_QUEUED,
      "attempt " + std::to_string(job.attempt()) + " waits for devices; it resumes " + from);
  // Ahead of jobs submitted after it: it was running.
  queue_.insert(queue_.begin(), job.id());
}

void JobManager::SendCancelLocked(const JobRecord& record, const std::string& reason) {
  for (const auto& [worker_id, slots] : record.slots) {
    auto worker = workers_.find(worker_id);
    if (worker == workers_.end()) continue;
    v1::ControllerMessage message;
    message.mutable_cancel()->set_job_id(record.job.id());
    message.mutable_cancel()->set_reason(reason);
    worker->second.sender(message);
  }
}

bool JobManager::PlaceLocked(JobRecord* record) {
  std::vector<WorkerSlots> free;
  int32_t free_count = 0;
  for (const auto& [id, w] : workers_) {
    if (w.draining.count(record->job.id()) > 0) continue;  // its old attempt still runs there
    WorkerSlots slots{id, {}};
    for (size_t i = 0; i < w.slot_jobs.size(); ++i) {
      if (w.slot_jobs[i].empty()) slots.free_slots.push_back(static_cast<int>(i));
    }
    free_count += static_cast<int32_t>(slots.free_slots.size());
    free.push_back(std::move(slots));
  }
  const v1::JobSpec& spec = record->job.spec();
  int32_t devices = record->job.batch().devices();
  if (spec.min_devices() > 0) {
    // Elastic: as many ranks as are free, up to devices, that split the
    // global batch; the plan follows the count.
    devices = 0;
    for (int32_t d = std::min(spec.devices(), free_count); d >= spec.min_devices(); --d) {
      if (record->job.batch().global_batch() % d == 0) {
        devices = d;
        break;
      }
    }
    if (devices == 0) return false;
  }
  std::optional<std::vector<RankSlot>> ranks = PlaceRanks(devices, std::move(free));
  if (!ranks) return false;
  StatusOr<v1::BatchPlan> plan = spec.min_devices() > 0
                                     ? PlanForDevices(spec, record->job.batch(), devices)
                                     : StatusOr<v1::BatchPlan>(record->job.batch());
  if (!plan.ok()) return false;

  // Rendezvous on rank 0's worker, on a port of its advertised range.
  WorkerRecord& rank0 = workers_.at(ranks->front().worker_id);
  int port = 0;
  if (devices > 1) {
    const int first = rank0.registration.rendezvous_port_first();
    for (int p = first; p < first + rank0.registration.rendezvous_port_count(); ++p) {
      if (rank0.ports_in_use.count(p) == 0) {
        port = p;
        break;
      }
    }
    if (port == 0) return false;  // all of rank 0's ports are taken: wait
    rank0.ports_in_use.insert(port);
    record->rendezvous_port = port;
    record->job.set_rendezvous_port(port);
    record->rendezvous_worker = ranks->front().worker_id;
  }

  if (spec.min_devices() > 0) {
    *record->job.mutable_batch() = *plan;
    v1::JobEvent placed;
    placed.mutable_log()->set_level(v1::LogMessage::LEVEL_INFO);
    placed.mutable_log()->set_text(
        "runs on " + std::to_string(devices) + " of " + std::to_string(spec.min_devices()) + ".." +
        std::to_string(spec.devices()) + " devices: global batch " +
        std::to_string(plan->global_batch()) +
        (plan->micro_batch() > 0
             ? " = micro_batch " + std::to_string(plan->micro_batch()) + " × accumulation " +
                   std::to_string(plan->accumulation_steps()) + " × " + std::to_string(devices)
             : " (micro_batch auto)"));
    AppendLocked(record, std::move(placed), /*closes=*/false);
  }
  const std::string& id = record->job.id();
  record->job.set_worker_id(ranks->front().worker_id);
  record->job.clear_placements();
  record->job.clear_runtime();
  std::map<std::string, v1::ControllerMessage> messages;  // one per worker
  for (int32_t rank = 0; rank < devices; ++rank) {
    const RankSlot& r = (*ranks)[static_cast<size_t>(rank)];
    WorkerRecord& w = workers_.at(r.worker_id);
    const v1::Device& device = w.registration.devices(r.slot);
    w.slot_jobs[static_cast<size_t>(r.slot)] = id;
    w.jobs.insert(id);
    record->slots[r.worker_id].push_back(r.slot);
    v1::RankPlacement* placement = record->job.add_placements();
    placement->set_rank(rank);
    placement->set_worker_id(r.worker_id);
    placement->set_device(DeviceName(device));
    placement->set_slot(r.slot);

    v1::Assignment* assign = messages[r.worker_id].mutable_assign();
    assign->set_job_id(id);
    assign->add_ranks(rank);
    *assign->add_devices() = device;
  }
  SetStateLocked(record, v1::JOB_STATE_STARTING, "");
  for (auto& [worker_id, message] : messages) {
    v1::Assignment* assign = message.mutable_assign();
    *assign->mutable_spec() = record->job.spec();
    *assign->mutable_batch() = record->job.batch();
    assign->set_world_size(devices);
    assign->set_rendezvous_host(rank0.registration.advertise_address());
    assign->set_rendezvous_port(port);
    assign->set_attempt(record->job.attempt());
    workers_.at(worker_id).sender(message);
  }
  return true;
}

void JobManager::ScheduleLocked() {
  int32_t pool = 0;
  std::string sizes;
  for (const auto& [id, w] : workers_) {
    pool += static_cast<int32_t>(w.slot_jobs.size());
    sizes += (sizes.empty() ? "" : ", ") + id + " " + std::to_string(w.slot_jobs.size());
  }
  // FIFO among the jobs the pool can hold, so a large job is not starved by
  // a stream of small ones; a job larger than the whole pool waits aside
  // (with a reason) and blocks nobody.
  for (auto it = queue_.begin(); it != queue_.end();) {
    JobRecord* record = FindLocked(*it);
    const int32_t devices = record->job.spec().min_devices() > 0 ? record->job.spec().min_devices()
                                                                 : record->job.batch().devices();
    if (devices > pool) {
      const std::string reason = "needs " + std::to_string(devices) +
                                 " device slots; the pool has " + std::to_string(pool) +
                                 (sizes.empty() ? " (no worker connected)" : " (" + sizes + ")");
      if (record->job.reason() != reason) {
        SetStateLocked(record, v1::JOB_STATE_QUEUED, reason);
      }
      ++it;
      continue;
    }
    if (!PlaceLocked(record)) return;
    it = queue_.erase(it);
    UpdateGaugesLocked();
  }
}

bool JobManager::NoteReceivedLocked(JobRecord* record, int32_t attempt, int32_t rank,
                                    int64_t sequence) {
  if (sequence <= 0) return true;  // not numbered: nothing to know it by
  int64_t& highest = record->received[{attempt, rank}];
  if (sequence <= highest) return false;
  highest = sequence;
  return true;
}

bool JobManager::TakeNewLocked(JobRecord* record, int32_t attempt, const v1::JobEvent& event) {
  return NoteReceivedLocked(record, attempt, event.rank(), event.rank_sequence());
}

void JobManager::ReleaseHeldLocked(const JobRecord::RankReport& report) {
  std::multiset<uint64_t>& held = held_link_sequences_[report.worker_id];
  if (auto it = held.find(report.link_sequence); it != held.end()) held.erase(it);
}

void JobManager::ClearPendingStepsLocked(JobRecord* record) {
  for (const auto& [step, reports] : record->pending_steps) {
    for (const JobRecord::RankReport& report : reports) ReleaseHeldLocked(report);
  }
  record->pending_steps.clear();
}

void JobManager::MergeStepLocked(JobRecord* record, const std::string& worker_id,
                                 uint64_t link_sequence, v1::JobEvent event) {
  const int64_t step = event.step().step();
  auto& reports = record->pending_steps[step];
  reports.push_back({worker_id, event.step(), event.rank_sequence(), link_sequence});
  held_link_sequences_[worker_id].insert(link_sequence);
  if (static_cast<int32_t>(reports.size()) < record->job.batch().devices()) return;
  // Recorded below, durably: they hold nothing back any more.
  for (const JobRecord::RankReport& report : reports) ReleaseHeldLocked(report);

  std::sort(reports.begin(), reports.end(),
            [](const auto& a, const auto& b) { return a.step.rank() < b.step.rank(); });
  v1::StepMetrics merged = reports.front().step;  // rank 0: global loss and counts
  for (const JobRecord::RankReport& report : reports) {
    const v1::StepMetrics& r = report.step;
    v1::RankStepMetrics* rank = merged.add_ranks();
    rank->set_rank(r.rank());
    rank->set_worker_id(report.worker_id);
    rank->set_rank_sequence(report.rank_sequence);
    rank->set_samples(r.samples());
    rank->set_microbatches(r.microbatches());
    rank->set_allreduce_calls(r.allreduce_calls());
    rank->set_allreduce_bytes(r.allreduce_bytes());
    rank->set_comm_seconds(r.comm_seconds());
    rank->set_step_seconds(r.step_seconds());
    rank->set_tensor_bytes(r.tensor_bytes());
    rank->set_tensor_peak_bytes(r.tensor_peak_bytes());
    rank->set_process_rss_bytes(r.process_rss_bytes());
    rank->set_allocator_reserved_bytes(r.allocator_reserved_bytes());
    rank->set_allocator_retries(r.allocator_retries());
  }
  record->pending_steps.erase(step);
  // Every rank's number is in `ranks`.
  event.clear_rank();
  event.clear_rank_sequence();
  *event.mutable_step() = std::move(merged);
  RecordStepLocked(record, std::move(event));
}

void JobManager::RecordStepLocked(JobRecord* record, v1::JobEvent event) {
  const std::string& id = record->job.id();
  event.mutable_step()->set_attempt(record->job.attempt());
  event.set_attempt(record->job.attempt());
  const v1::StepMetrics& step = event.step();
  record->job.set_steps_done(step.step());
  *record->job.mutable_last_step() = step;
  metrics_->job_steps->WithLabels({id})->Increment();
  metrics_->job_loss->WithLabels({id})->Set(step.loss());
  metrics_->job_samples_per_second->WithLabels({id})->Set(step.samples_per_second());
  metrics_->job_effective_batch->WithLabels({id})->Set(static_cast<double>(step.effective_batch()));
  if (step.ranks_size() == 0) {
    v1::RankStepMetrics only;
    only.set_tensor_bytes(step.tensor_bytes());
    only.set_tensor_peak_bytes(step.tensor_peak_bytes());
    only.set_process_rss_bytes(step.process_rss_bytes());
    only.set_allocator_reserved_bytes(step.allocator_reserved_bytes());
    only.set_allocator_retries(step.allocator_retries());
    RecordRankMemoryLocked(id, only);
  }
  for (const v1::RankStepMetrics& rank : step.ranks()) RecordRankMemoryLocked(id, rank);
  metrics_->job_step_seconds->WithLabels({id})->Observe(step.step_seconds());
  event.clear_sequence();
  AppendLocked(record, std::move(event), /*closes=*/false);
}

void JobManager::RecordRankMemoryLocked(const std::string& job_id,
                                        const v1::RankStepMetrics& rank) {
  const std::vector<std::string> labels{job_id, std::to_string(rank.rank())};
  metrics_->job_tensor_bytes->WithLabels(labels)->Set(static_cast<double>(rank.tensor_bytes()));
  metrics_->job_tensor_peak_bytes->WithLabels(labels)->Set(
      static_cast<double>(rank.tensor_peak_bytes()));
  metrics_->job_process_rss_bytes->WithLabels(labels)->Set(
      static_cast<double>(rank.process_rss_bytes()));
  metrics_->job_allocator_reserved_bytes->WithLabels(labels)->Set(
      static_cast<double>(rank.allocator_reserved_bytes()));
  metrics_->job_allocator_retries->WithLabels(labels)->Set(
      static_cast<double>(rank.allocator_retries()));
}

void JobManager::AppendLocked(JobRecord* record, v1::JobEvent event, bool closes) {
  // Numbered now, in order; recorded durably, then shown to watchers, by the
  // writer: a watcher never sees an event a restart would lose.
  event.set_job_id(record->job.id());
  event.set_sequence(++record->last_sequence);
  if (!event.has_time()) *event.mutable_time() = Now();
  // A record added to an ended job (a superseded attempt's late events)
  // keeps its stream closed: watchers of the ended job must end.
  closes = closes || IsTerminal(record->job.state());
  unflushed_.push_back({record, std::move(event), closes});
  if (!batching_) FlushLocked();
}

void JobManager::FlushLocked() {
  if (unflushed_.empty() && unflushed_deletions_.empty() && after_durable_.empty()) return;
  // One change per run of one job's events: its snapshot as of now, and
  // where the events go once durable.
  struct Shown {
    std::shared_ptr<EventLog> log;
    std::vector<bool> closes;
  };
  std::vector<StoreWriter::Change> changes;
  std::vector<Shown> shown;
  for (size_t i = 0; i < unflushed_.size();) {
    JobRecord* record = unflushed_[i].record;
    StoreWriter::Change change{record->job, {}};
    Shown where{record->log, {}};
    for (; i < unflushed_.size() && unflushed_[i].record == record; ++i) {
      change.events.push_back(std::move(unflushed_[i].event));
      where.closes.push_back(unflushed_[i].closes);
    }
    changes.push_back(std::move(change));
    shown.push_back(std::move(where));
  }
  unflushed_.clear();
  metrics::Counter* const events_total = metrics_->events_total;
  writer_.Submit(std::move(changes), std::move(unflushed_deletions_),
                 [shown = std::move(shown), done = std::move(after_durable_),
                  events_total](std::vector<StoreWriter::Change>* durable) {
                   std::set<EventLog*> grown;
                   for (size_t i = 0; i < durable->size(); ++i) {
                     std::vector<v1::JobEvent>& events = (*durable)[i].events;
                     for (size_t j = 0; j < events.size(); ++j) {
                       shown[i].log->Append(std::move(events[j]), shown[i].closes[j]);
                       events_total->Increment();
                     }
                     grown.insert(shown[i].log.get());
                   }
                   for (EventLog* log : grown) log->Notify();
                   for (const auto& d : done) d();
                 });
  unflushed_deletions_.clear();
  after_durable_.clear();
}

void JobManager::WhenDurable(std::function<void()> done) {
  MutexLock lock(&mutex_);
  after_durable_.push_back(std::move(done));
  if (!batching_) FlushLocked();
}

void JobManager::Flush() { writer_.Flush(); }

void JobManager::UpdateGaugesLocked() {
  int32_t free_slots = 0;
  for (const auto& [id, w] : workers_) free_slots += w.free_slots();
  metrics_->workers_connected->Set(static_cast<double>(workers_.size()));
  metrics_->device_slots_free->Set(free_slots);
}

}  // namespace accumulus::server
