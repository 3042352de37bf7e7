#include "server/job_manager.h"

#include <algorithm>

#include <google/protobuf/util/time_util.h>
#include <spdlog/spdlog.h>

#include "common/job_spec.h"

namespace accumulus::server {
namespace {

using google::protobuf::util::TimeUtil;

bool IsTerminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED ||
         s == v1::JOB_STATE_CANCELLED;
}

std::string StateLabel(v1::JobState s) {
  std::string name = v1::JobState_Name(s);
  name = name.substr(std::string("JOB_STATE_").size());
  std::transform(name.begin(), name.end(), name.begin(), ::tolower);
  return name;
}

v1::JobEvent StateEvent(v1::JobState state, const std::string& reason,
                        const std::string& worker_id) {
  v1::JobEvent event;
  event.mutable_state()->set_state(state);
  event.mutable_state()->set_reason(reason);
  event.mutable_state()->set_worker_id(worker_id);
  return event;
}

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
  if (batch->devices() > 1) {
    metrics_->jobs_rejected->Increment();
    return Status::Unimplemented("devices " + std::to_string(batch->devices()) +
                                 ": data-parallel jobs (devices > 1) are not supported yet");
  }
  Touched touched;
  v1::Job job;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string id = "job-" + std::to_string(next_job_number_++);
    JobRecord& record = jobs_[id];
    record.log = std::make_shared<EventLog>(id);
    record.job.set_id(id);
    *record.job.mutable_spec() = *spec;
    *record.job.mutable_batch() = *batch;
    *record.job.mutable_submitted_at() = TimeUtil::GetCurrentTime();
    record.job.set_steps_total(TotalSteps(*spec, *batch));
    job_order_.push_back(id);
    queue_.push_back(id);
    SetStateLocked(&record, v1::JOB_STATE_QUEUED, "waiting for a free device slot", &touched);
    ScheduleLocked(&touched);
    job = record.job;
  }
  metrics_->jobs_submitted->Increment();
  NotifyAll(touched);
  spdlog::info("job {} submitted: micro_batch {} × accumulation_steps {} × devices {} = {}",
               job.id(), job.batch().micro_batch(), job.batch().accumulation_steps(),
               job.batch().devices(), job.batch().global_batch());
  return job;
}

StatusOr<v1::Job> JobManager::Get(const std::string& job_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return Status::NotFound("no job \"" + job_id + "\"");
  return it->second.job;
}

std::vector<v1::Job> JobManager::List() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<v1::Job> out;
  for (const auto& id : job_order_) out.push_back(jobs_.at(id).job);
  return out;
}

StatusOr<v1::Job> JobManager::Cancel(const std::string& job_id, const std::string& reason) {
  Touched touched;
  v1::Job job;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    JobRecord* record = FindLocked(job_id);
    if (record == nullptr) return Status::NotFound("no job \"" + job_id + "\"");
    const v1::JobState state = record->job.state();
    const std::string why = reason.empty() ? "cancelled by request" : reason;
    if (IsTerminal(state)) {
      return Status::FailedPrecondition("job " + job_id + " already ended " + StateLabel(state));
    }
    if (state == v1::JOB_STATE_QUEUED) {
      queue_.erase(std::remove(queue_.begin(), queue_.end(), job_id), queue_.end());
      SetStateLocked(record, v1::JOB_STATE_CANCELLED, why, &touched);
    } else if (state != v1::JOB_STATE_CANCELLING) {
      SetStateLocked(record, v1::JOB_STATE_CANCELLING, why, &touched);
      auto worker = workers_.find(record->job.worker_id());
      if (worker != workers_.end()) {
        v1::ControllerMessage message;
        message.mutable_cancel()->set_job_id(job_id);
        message.mutable_cancel()->set_reason(why);
        worker->second.sender(message);
      }
    }
    job = record->job;
  }
  NotifyAll(touched);
  return job;
}

StatusOr<std::shared_ptr<EventLog>> JobManager::Events(const std::string& job_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return Status::NotFound("no job \"" + job_id + "\"");
  return it->second.log;
}

std::vector<v1::WorkerInfo> JobManager::Workers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<v1::WorkerInfo> out;
  for (const auto& [id, w] : workers_) {
    v1::WorkerInfo info;
    info.set_id(id);
    info.set_hostname(w.registration.hostname());
    *info.mutable_devices() = w.registration.devices();
    info.set_free_slots(w.free_slots());
    for (const auto& job : w.jobs) info.add_job_ids(job);
    out.push_back(std::move(info));
  }
  return out;
}

uint64_t JobManager::WorkerConnected(const v1::Register& registration, WorkerSender sender) {
  Touched touched;
  uint64_t session = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string& id = registration.worker_id();
    const std::set<std::string> still_running(registration.running_job_ids().begin(),
                                              registration.running_job_ids().end());
    WorkerRecord& worker = workers_[id];
    // Jobs of a previous session the worker no longer runs are lost.
    for (const std::string& job_id : std::set<std::string>(worker.jobs)) {
      if (still_running.count(job_id) == 0) {
        SetStateLocked(FindLocked(job_id), v1::JOB_STATE_FAILED,
                       "worker " + id + " reconnected without the job", &touched);
      }
    }
    worker.registration = registration;
    worker.session = session = next_session_++;
    worker.sender = std::move(sender);
    // The jobs it still runs keep their slots.
    worker.slot_jobs.assign(static_cast<size_t>(registration.devices_size()), "");
    for (const std::string& job_id : worker.jobs) {
      for (int slot : FindLocked(job_id)->slots) {
        if (slot < registration.devices_size()) worker.slot_jobs[static_cast<size_t>(slot)] = job_id;
      }
    }
    ScheduleLocked(&touched);
    UpdateGaugesLocked();
  }
  NotifyAll(touched);
  spdlog::info("worker {} connected with {} device slot(s)", registration.worker_id(),
               registration.devices_size());
  return session;
}

void JobManager::WorkerGone(const std::string& worker_id, uint64_t session,
                            const std::string& reason) {
  Touched touched;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = workers_.find(worker_id);
    if (it == workers_.end() || it->second.session != session) return;  // replaced
    for (const std::string& job_id : std::set<std::string>(it->second.jobs)) {
      JobRecord* record = FindLocked(job_id);
      const bool cancelling = record->job.state() == v1::JOB_STATE_CANCELLING;
      SetStateLocked(record, cancelling ? v1::JOB_STATE_CANCELLED : v1::JOB_STATE_FAILED,
                     "worker " + worker_id + " lost: " + reason, &touched);
    }
    workers_.erase(it);
    ScheduleLocked(&touched);
    UpdateGaugesLocked();
  }
  NotifyAll(touched);
  spdlog::warn("worker {} disconnected: {}", worker_id, reason);
}

void JobManager::RecordEvents(const std::string& worker_id, const v1::TrainerEvents& events) {
  Touched touched;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    JobRecord* record = FindLocked(events.job_id());
    if (record == nullptr || record->job.worker_id() != worker_id ||
        IsTerminal(record->job.state())) {
      return;  // A late event of a job that ended or moved: nothing to add to.
    }
    const std::string& id = record->job.id();
    for (const v1::JobEvent& event : events.events()) {
      if (event.has_step()) {
        const v1::StepMetrics& step = event.step();
        record->job.set_steps_done(step.step());
        *record->job.mutable_last_step() = step;
        metrics_->job_steps->WithLabels({id})->Increment();
        metrics_->job_loss->WithLabels({id})->Set(step.loss());
        metrics_->job_samples_per_second->WithLabels({id})->Set(step.samples_per_second());
        metrics_->job_effective_batch->WithLabels({id})->Set(
            static_cast<double>(step.effective_batch()));
        metrics_->job_tensor_peak_bytes->WithLabels({id})->Set(
            static_cast<double>(step.tensor_peak_bytes()));
        metrics_->job_step_seconds->WithLabels({id})->Observe(step.step_seconds());
      }
      v1::JobEvent copy = event;
      copy.clear_sequence();
      record->log->Append(std::move(copy), /*closes=*/false);
      metrics_->events_total->Increment();
    }
    touched.push_back(record->log);
  }
  NotifyAll(touched);
}

void JobManager::RecordStatus(const std::string& worker_id, const v1::AssignmentStatus& status) {
  Touched touched;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    JobRecord* record = FindLocked(status.job_id());
    if (record == nullptr || record->job.worker_id() != worker_id ||
        IsTerminal(record->job.state())) {
      return;
    }
    const v1::JobState current = record->job.state();
    if (status.state() == v1::JOB_STATE_RUNNING) {
      if (current == v1::JOB_STATE_STARTING) {
        *record->job.mutable_started_at() = TimeUtil::GetCurrentTime();
        SetStateLocked(record, v1::JOB_STATE_RUNNING, "", &touched);
      }
    } else if (IsTerminal(status.state())) {
      // A cancel request wins over the trainer's own reason only if the
      // trainer stopped because of it.
      const bool cancelled =
          current == v1::JOB_STATE_CANCELLING && status.state() == v1::JOB_STATE_CANCELLED;
      SetStateLocked(record, status.state(),
                     cancelled ? record->job.reason() : status.reason(), &touched);
      ScheduleLocked(&touched);
    }
  }
  NotifyAll(touched);
}

JobManager::JobRecord* JobManager::FindLocked(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : &it->second;
}

void JobManager::SetStateLocked(JobRecord* record, v1::JobState state, const std::string& reason,
                                Touched* touched) {
  v1::Job& job = record->job;
  if (job.state() != v1::JOB_STATE_UNSPECIFIED) {
    metrics_->jobs->WithLabels({StateLabel(job.state())})->Decrement();
  }
  metrics_->jobs->WithLabels({StateLabel(state)})->Increment();
  job.set_state(state);
  job.set_reason(reason);
  const bool terminal = IsTerminal(state);
  if (terminal) {
    *job.mutable_finished_at() = TimeUtil::GetCurrentTime();
    ReleaseLocked(record);
    spdlog::info("job {} {}{}{}", job.id(), StateLabel(state), reason.empty() ? "" : ": ",
                 reason);
  }
  record->log->Append(StateEvent(state, reason, job.worker_id()), terminal);
  metrics_->events_total->Increment();
  touched->push_back(record->log);
}

void JobManager::ReleaseLocked(JobRecord* record) {
  const std::string& id = record->job.id();
  auto worker = workers_.find(record->job.worker_id());
  if (worker != workers_.end() && worker->second.jobs.erase(id) > 0) {
    for (std::string& holder : worker->second.slot_jobs) {
      if (holder == id) holder.clear();
    }
  }
  record->slots.clear();
  // Per-job series end with the job.
  metrics_->job_steps->Remove({id});
  metrics_->job_loss->Remove({id});
  metrics_->job_samples_per_second->Remove({id});
  metrics_->job_effective_batch->Remove({id});
  metrics_->job_tensor_peak_bytes->Remove({id});
  metrics_->job_step_seconds->Remove({id});
  UpdateGaugesLocked();
}

void JobManager::ScheduleLocked(Touched* touched) {
  // FIFO: a job waits for the jobs queued before it, so a large job is not
  // starved by a stream of small ones.
  while (!queue_.empty()) {
    JobRecord* record = FindLocked(queue_.front());
    const int32_t devices = record->job.batch().devices();
    auto worker = std::find_if(workers_.begin(), workers_.end(), [devices](const auto& w) {
      return w.second.free_slots() >= devices;
    });
    if (worker == workers_.end()) return;
    queue_.erase(queue_.begin());
    WorkerRecord& w = worker->second;
    w.jobs.insert(record->job.id());
    for (size_t slot = 0; slot < w.slot_jobs.size() && record->slots.size() < static_cast<size_t>(devices); ++slot) {
      if (!w.slot_jobs[slot].empty()) continue;
      w.slot_jobs[slot] = record->job.id();
      record->slots.push_back(static_cast<int>(slot));
    }
    record->job.set_worker_id(worker->first);
    SetStateLocked(record, v1::JOB_STATE_STARTING, "", touched);

    v1::ControllerMessage message;
    v1::Assignment* assign = message.mutable_assign();
    assign->set_job_id(record->job.id());
    *assign->mutable_spec() = record->job.spec();
    *assign->mutable_batch() = record->job.batch();
    for (int32_t rank = 0; rank < devices; ++rank) {
      assign->add_ranks(rank);
      *assign->add_devices() = w.registration.devices(record->slots[static_cast<size_t>(rank)]);
    }
    assign->set_world_size(devices);
    w.sender(message);
    UpdateGaugesLocked();
  }
}

void JobManager::UpdateGaugesLocked() {
  int32_t free_slots = 0;
  for (const auto& [id, w] : workers_) free_slots += w.free_slots();
  metrics_->workers_connected->Set(static_cast<double>(workers_.size()));
  metrics_->device_slots_free->Set(free_slots);
}

void JobManager::NotifyAll(const Touched& touched) {
  // A log touched several times needs one notification.
  std::set<EventLog*> seen;
  for (const auto& log : touched) {
    if (seen.insert(log.get()).second) log->Notify();
  }
}

}  // namespace accumulus::server
