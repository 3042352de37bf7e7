#include "server/job_manager.h"

#include <google/protobuf/util/message_differencer.h>
#include <spdlog/spdlog.h>

#include <cctype>

#include "common/job_spec.h"
#include "server/job_state.h"

namespace accumulus::server {

namespace {

constexpr size_t kMaxRequestIdLength = 128;

// A request_id: 1 to 128 of [A-Za-z0-9._:-] (an empty one is none). The
// error names the position of a bad character, not the character.
Status ValidateRequestId(const std::string& id) {
  if (id.size() > kMaxRequestIdLength) {
    return Status::InvalidArgument("request_id has " + std::to_string(id.size()) +
                                   " characters; at most " + std::to_string(kMaxRequestIdLength));
  }
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != ':' &&
        c != '-') {
      return Status::InvalidArgument("request_id: character " + std::to_string(i + 1) +
                                     " is not a letter, a digit or one of . _ : -");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<v1::Job> JobManager::Submit(const v1::JobSpec& input, const std::string& owner,
                                     const std::string& request_id) {
  StatusOr<v1::JobSpec> spec = NormalizeJobSpec(input);
  StatusOr<v1::BatchPlan> batch = spec.ok() ? ResolveBatchPlan(*spec) : spec.status();
  // Every violation at once: the spec's and the request's own.
  std::vector<FieldViolation> bad = batch.status().field_violations();
  if (Status s = ValidateRequestId(request_id); !s.ok()) bad.push_back({"request_id", s.message()});
  if (!bad.empty() || !batch.ok()) {
    MutexLock lock(&mutex_);
    metrics_.Rejected();
    return bad.empty() ? batch.status() : Status::InvalidFields(std::move(bad));
  }
  v1::Job job;
  {
    MutexLock lock(&mutex_);
    if (const JobRecord* earlier =
            request_id.empty() ? nullptr : jobs_.FindRequest(owner, request_id)) {
      // A retry: the job the first request made (durable once that request's
      // change is, which the reply waits for), if it asked for the same.
      if (!google::protobuf::util::MessageDifferencer::Equals(earlier->job.spec(), *spec)) {
        return Status::AlreadyExists("request_id " + request_id + " made " + earlier->job.id() +
                                     " with a different spec; a new job needs a new request_id");
      }
      spdlog::info("job {}: a retry of request {} by {}", earlier->job.id(), request_id, owner);
      return earlier->job;
    }
    if (Status s = RefuseWhileUnwritable("submitted"); !s.ok()) return s;
    if (Status s = jobs_.active_jobs().Admit(owner, "submitted"); !s.ok()) return s;
    if (Status s = submit_rate_.Take(owner, clock_->Now()); !s.ok()) return s;
    EventRecorder::Batch recording(&recorder_);
    JobRecord& record = jobs_.Submit(*std::move(spec), *std::move(batch), owner, request_id);
    metrics_.Submitted();
    scheduler_.ScheduleSubmitted();
    job = record.job;
  }
  spdlog::info("job {} submitted by {}: micro_batch {} × accumulation_steps {} × devices {} = {}",
               job.id(), job.owner(), job.batch().micro_batch(), job.batch().accumulation_steps(),
               job.batch().devices(), job.batch().global_batch());
  return job;
}

StatusOr<v1::Job> JobManager::Get(const std::string& job_id) const {
  v1::Job job;
  std::shared_ptr<EventLog> log;
  {
    MutexLock lock(&mutex_);
    const JobRecord* record = jobs_.Find(job_id);
    if (record == nullptr) return Status::NotFound("no job \"" + job_id + "\"");
    job = record->job;
    log = record->log;
  }
  // Read after the job: every event it reflects is at most this one. The
  // log's own lock is never taken under the manager's.
  if (log != nullptr) job.set_last_event_sequence(log->last_sequence());
  return job;
}

std::vector<v1::Job> JobManager::List() const {
  MutexLock lock(&mutex_);
  return jobs_.List();
}

StatusOr<v1::ListJobsResponse> JobManager::ListPage(const v1::ListJobsRequest& request) const {
  StatusOr<ListQuery> query = ParseListQuery(request);
  if (!query.ok()) return query.status();
  MutexLock lock(&mutex_);
  return jobs_.ListPage(*query);
}

StatusOr<v1::Job> JobManager::Cancel(const std::string& job_id, const std::string& reason) {
  MutexLock lock(&mutex_);
  if (Status s = RefuseWhileUnwritable("cancelled"); !s.ok()) return s;
  EventRecorder::Batch recording(&recorder_);
  StatusOr<v1::Job> job = jobs_.Cancel(job_id, reason);
  if (job.ok()) scheduler_.Schedule();  // a job behind a cancelled one may fit now
  return job;
}

StatusOr<v1::Job> JobManager::Resume(const std::string& job_id) {
  MutexLock lock(&mutex_);
  if (Status s = RefuseWhileUnwritable("resumed"); !s.ok()) return s;
  EventRecorder::Batch recording(&recorder_);
  StatusOr<v1::Job> job = jobs_.Resume(job_id);
  if (!job.ok()) return job;
  scheduler_.Schedule();
  return jobs_.Find(job_id)->job;  // placed, perhaps, since
}

StatusOr<std::shared_ptr<EventLog>> JobManager::Events(const std::string& job_id) const {
  MutexLock lock(&mutex_);
  const JobRecord* record = jobs_.Find(job_id);
  if (record == nullptr) return Status::NotFound("no job \"" + job_id + "\"");
  return record->log;
}

std::vector<v1::WorkerInfo> JobManager::Workers() const {
  MutexLock lock(&mutex_);
  return workers_.Infos();
}

Status JobManager::Recover(std::chrono::milliseconds worker_grace) {
  if (store_ == nullptr) return Status::Ok();
  // What each rank's trainer had sent, so that a resent event is known as
  // such: from every stored event (the logs keep only the newest), here,
  // outside the lock.
  RankReports received;
  StatusOr<std::vector<JobStore::StoredJob>> stored = store_->Load(
      events_in_memory_, [&received](const std::string& job_id, const v1::JobEvent& event) {
        received.NoteStored(job_id, event);
      });
  if (!stored.ok()) return stored.status();
  const size_t count = stored->size();
  MutexLock lock(&mutex_);
  reports_ = std::move(received);  // before any worker connects: nothing is pending
  const AwakeClock::time_point deadline = clock_->Now() + worker_grace;
  for (JobStore::StoredJob& s : *stored) {
    JobRecord& record = jobs_.Restore(std::move(s));
    const v1::JobState state = record.job.state();
    if (IsTerminal(state) || state == v1::JOB_STATE_QUEUED) continue;
    // Placed: its ranks run on (or were lost with) their workers, which
    // claim them when they reconnect.
    for (const v1::RankPlacement& p : record.job.placements()) {
      record.slots[p.worker_id()].push_back(p.slot());
      awaited_workers_.emplace(
          p.worker_id(),
          AwaitedWorker{deadline, "worker " + p.worker_id() +
                                      " did not reconnect after the controller restarted"});
    }
    record.rendezvous_port = record.job.rendezvous_port();
    if (record.job.placements_size() > 0) {
      record.rendezvous_worker = record.job.placements(0).worker_id();
    }
  }
  metrics_.WorkerPool(workers_.size(), workers_.PoolSize(), workers_.FreeSlotCount());
  spdlog::info("recovered {} job(s) from {}; waiting for {} worker(s) to reconnect", count,
               store_->path(), awaited_workers_.size());
  return Status::Ok();
}

void JobManager::Expire() {
  MutexLock lock(&mutex_);
  // First, and outside the batch below: a batch may not hold events of a
  // job pruned before it ends.
  jobs_.Prune();
  EventRecorder::Batch recording(&recorder_);
  metrics_.ExpireFinished();
  // Every 100 ms: the queue is looked at again only when slots were freed.
  if (LoseAwaitedWorkers(clock_->Now())) scheduler_.Schedule();
}

bool JobManager::LoseAwaitedWorkers(AwakeClock::time_point now) {
  bool lost = false;
  for (auto it = awaited_workers_.begin(); it != awaited_workers_.end();) {
    if (now < it->second.until) {
      ++it;
      continue;
    }
    const std::string worker_id = it->first;
    const std::string why = std::move(it->second.lost_because);
    it = awaited_workers_.erase(it);
    for (auto& [job_id, record] : jobs_.jobs()) {
      if (IsTerminal(record.job.state()) || record.slots.count(worker_id) == 0) continue;
      jobs_.LoseRanks(&record, worker_id, why);
      lost = true;
    }
  }
  return lost;
}

uint64_t JobManager::WorkerConnected(const v1::Register& registration, WorkerSender sender) {
  uint64_t session = 0;
  {
    MutexLock lock(&mutex_);
    EventRecorder::Batch recording(&recorder_);
    const std::string& id = registration.worker_id();
    const std::set<std::string> still_running(registration.running_job_ids().begin(),
                                              registration.running_job_ids().end());
    WorkerRegistry::Worker* worker = &workers_.Connecting(id);
    if (awaited_workers_.erase(id) > 0) ClaimAwaitedRanks(id, worker);
    RecordDroppedMessages(registration);
    // Ranks of a previous session that the worker no longer runs are lost.
    for (const std::string& job_id : std::set<std::string>(worker->jobs)) {
      if (still_running.count(job_id) > 0) continue;
      jobs_.LoseRanks(jobs_.Find(job_id), id, "worker " + id + " reconnected without the job");
    }
    worker->registration = registration;
    worker->session = session = workers_.NextSession();
    worker->sender = std::move(sender);
    StopRanksNotPlaced(id, worker, still_running);
    StopEndedAttempts(id, *worker, still_running);
    // The jobs it still runs keep their slots.
    worker->slot_jobs.assign(static_cast<size_t>(registration.devices_size()), "");
    for (const std::string& job_id : worker->jobs) {
      for (int slot : jobs_.Find(job_id)->slots[id]) {
        if (slot < registration.devices_size()) {
          worker->slot_jobs[static_cast<size_t>(slot)] = job_id;
        }
      }
    }
    scheduler_.Schedule();
  }
  spdlog::info("worker {} connected with {} device slot(s)", registration.worker_id(),
               registration.devices_size());
  return session;
}

void JobManager::ClaimAwaitedRanks(const std::string& worker_id, WorkerRegistry::Worker* worker) {
  for (auto& [job_id, record] : jobs_.jobs()) {
    if (IsTerminal(record.job.state()) || record.slots.count(worker_id) == 0) continue;
    worker->jobs.insert(job_id);
    if (record.rendezvous_port != 0 && record.rendezvous_worker == worker_id) {
      worker->ports_in_use.insert(record.rendezvous_port);
    }
  }
}

void JobManager::RecordDroppedMessages(const v1::Register& registration) {
  for (const v1::DroppedMessages& d : registration.dropped()) {
    JobRecord* record = jobs_.Find(d.job_id());
    if (record == nullptr) continue;
    v1::JobEvent warning;
    warning.mutable_log()->set_level(v1::LogMessage::LEVEL_WARNING);
    warning.mutable_log()->set_text(
        "worker " + registration.worker_id() + " dropped " + std::to_string(d.count()) +
        " message(s) of this job while the controller was unreachable (its buffer was full): "
        "steps may be missing from this stream");
    recorder_.Append(record, std::move(warning), /*closes=*/false);
  }
}

void JobManager::StopRanksNotPlaced(const std::string& worker_id, WorkerRegistry::Worker* worker,
                                    const std::set<std::string>& still_running) {
  // Ranks it still runs that are no longer placed there (the job moved on,
  // restarted elsewhere or ended while the worker was away) must stop: two
  // attempts of one job must never train (and checkpoint) at once.
  for (const std::string& job_id : still_running) {
    if (worker->jobs.count(job_id) > 0) continue;
    worker->draining.insert(job_id);
    workers_.SendCancel(worker_id, job_id, "the job is no longer placed on worker " + worker_id);
  }
}

void JobManager::StopEndedAttempts(const std::string& worker_id,
                                   const WorkerRegistry::Worker& worker,
                                   const std::set<std::string>& still_running) {
  for (const std::string& job_id : worker.jobs) {
    const JobRecord* record = jobs_.Find(job_id);
    if (record == nullptr || still_running.count(job_id) == 0) continue;
    const v1::JobState state = record->job.state();
    if (state == v1::JOB_STATE_CANCELLING || state == v1::JOB_STATE_RESTARTING) {
      workers_.SendCancel(worker_id, job_id, record->job.reason());
    }
  }
}

Status JobManager::RefuseWhileUnwritable(const std::string& what) const {
  const Status writable = writer_.Writable();
  if (writable.ok()) return writable;
  return Status::Unavailable("the controller cannot record changes now (" + writable.message() +
                             "): nothing was " + what + "; try again once it can");
}

void JobManager::BeginShutdown() {
  // Nothing may wait for a disk from now on: what the store cannot write
  // is left to the workers, who send it again to the next controller.
  writer_.StopRetrying();
  std::vector<std::shared_ptr<EventLog>> logs;
  {
    MutexLock lock(&mutex_);
    shutting_down_ = true;
    logs = jobs_.Logs();
  }
  // Outside the lock: a stream may finish on this thread.
  for (const auto& log : logs) log->EndStreams();
}

void JobManager::WorkerGone(const std::string& worker_id, uint64_t session,
                            const std::string& reason, AwakeClock::time_point lost_after) {
  bool awaited = false;
  {
    MutexLock lock(&mutex_);
    if (shutting_down_) return;
    WorkerRegistry::Worker* worker = workers_.Find(worker_id);
    if (worker == nullptr || worker->session != session) return;  // replaced
    EventRecorder::Batch recording(&recorder_);
    if (!worker->jobs.empty()) metrics_.WorkerLost();
    const std::string why = "worker " + worker_id + " lost: " + reason;
    const bool silent = lost_after <= clock_->Now();
    // A copy: losing ranks takes the job out of the worker's set.
    for (const std::string& job_id : std::set<std::string>(worker->jobs)) {
      JobRecord* record = jobs_.Find(job_id);
      if (record == nullptr || record->slots.count(worker_id) == 0) continue;
      if (silent) {
        jobs_.LoseRanks(record, worker_id, why);
        continue;
      }
      awaited = true;  // the ranks stay placed (their slots held) meanwhile
      v1::JobEvent waiting;
      waiting.mutable_log()->set_level(v1::LogMessage::LEVEL_WARNING);
      waiting.mutable_log()->set_text(
          "worker " + worker_id + "'s link ended (" + reason +
          "): the attempt goes on if the worker reconnects still running it within the "
          "lost-worker timeout; otherwise its ranks there are lost");
      recorder_.Append(record, std::move(waiting), /*closes=*/false);
    }
    if (awaited) {
      awaited_workers_[worker_id] = {
          lost_after, why + ", and it did not reconnect within the lost-worker timeout"};
    }
    workers_.Remove(worker_id, session);
    scheduler_.Schedule();
  }
  spdlog::warn("worker {} disconnected: {}{}", worker_id, reason,
               awaited ? "; its ranks keep their attempt if it reconnects within the lost-worker "
                         "timeout"
                       : "");
}

void JobManager::RecordEvents(const std::string& worker_id, const v1::TrainerEvents& events,
                              uint64_t link_sequence) {
  MutexLock lock(&mutex_);
  ingest_.Record(worker_id, events, link_sequence);
}

void JobManager::RecordStatus(const std::string& worker_id, const v1::AssignmentStatus& status) {
  MutexLock lock(&mutex_);
  EventRecorder::Batch recording(&recorder_);
  jobs_.RankStatus(worker_id, status);
  scheduler_.Schedule();
}

void JobManager::RecordMessage(const std::string& worker_id, const v1::WorkerMessage& message,
                               bool new_status, EventRecorder::Durable when_durable) {
  MutexLock lock(&mutex_);
  EventRecorder::Batch recording(&recorder_);
  if (message.has_events()) ingest_.Record(worker_id, message.events(), message.sequence());
  if (message.has_status() && new_status) {
    jobs_.RankStatus(worker_id, message.status());
    scheduler_.Schedule();
  }
  if (when_durable) recorder_.WhenDurable(std::move(when_durable));
}

uint64_t JobManager::AcknowledgeableUpTo(const std::string& worker_id, uint64_t processed) const {
  MutexLock lock(&mutex_);
  return reports_.AcknowledgeableUpTo(worker_id, processed);
}

void JobManager::WhenDurable(EventRecorder::Durable done) {
  MutexLock lock(&mutex_);
  recorder_.WhenDurable(std::move(done));
}

void JobManager::Flush() { writer_.Flush(); }

}  // namespace accumulus::server
