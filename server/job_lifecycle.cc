#include "server/job_lifecycle.h"

#include <google/protobuf/util/time_util.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>

#include "common/clock.h"
#include "common/job_attempts.h"
#include "common/job_spec.h"
#include "server/job_id.h"
#include "server/job_state.h"

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

std::string ResumesFrom(const v1::Job& job) {
  return job.spec().checkpoint().dir().empty() ? "from the start (the job has no checkpoint.dir)"
                                               : "from its newest checkpoint";
}

}  // namespace

JobRecord& JobLifecycle::Submit(v1::JobSpec spec, v1::BatchPlan batch, const std::string& owner,
                                const std::string& request_id) {
  std::string id = NewJobId();
  while (jobs_.count(id) != 0) id = NewJobId();
  JobRecord& record = jobs_[id];
  record.log = NewLog(id);
  record.job.set_id(id);
  record.job.set_owner(owner);
  record.job.set_request_id(request_id);
  if (!request_id.empty()) requests_[{owner, request_id}] = id;
  record.job.set_attempt(1);
  record.job.set_steps_total(TotalSteps(spec, batch));
  *record.job.mutable_spec() = std::move(spec);
  *record.job.mutable_batch() = std::move(batch);
  *record.job.mutable_submitted_at() = SubmissionTime();
  order_.insert(ListPosition::Of(record.job));
  queue_.push_back(id);
  SetState(&record, v1::JOB_STATE_QUEUED,
           "waiting for " + std::to_string(record.job.batch().devices()) + " free device slot(s)");
  return record;
}

std::shared_ptr<EventLog> JobLifecycle::NewLog(const std::string& job_id) const {
  if (archive_ == nullptr) return std::make_shared<EventLog>(job_id);
  EventArchive* archive = archive_;
  return std::make_shared<EventLog>(
      job_id, EventLog::Options{events_in_memory_, [archive, job_id](int64_t after, int max) {
                                  return archive->Read(job_id, after, max);
                                }});
}

google::protobuf::Timestamp JobLifecycle::SubmissionTime() {
  google::protobuf::Timestamp now = Now();
  // Later than every job before it, even when two submits share a clock
  // tick or the clock stepped back: lists show jobs in submission order.
  const ListPosition& last = last_submitted_;
  if (std::make_pair(now.seconds(), now.nanos()) <= std::make_pair(last.seconds, last.nanos)) {
    now.set_seconds(last.seconds + (last.nanos == 999'999'999 ? 1 : 0));
    now.set_nanos(last.nanos == 999'999'999 ? 0 : last.nanos + 1);
  }
  last_submitted_ = {now.seconds(), now.nanos(), ""};
  return now;
}

JobRecord& JobLifecycle::Restore(JobStore::StoredJob stored) {
  const std::string id = stored.job.id();
  JobRecord& record = jobs_[id];
  record.job = std::move(stored.job);
  const v1::JobState state = record.job.state();
  record.last_sequence = stored.last_sequence;
  record.log = NewLog(id);
  record.log->Restore(std::move(stored.events), stored.last_sequence, IsTerminal(state));
  order_.insert(ListPosition::Of(record.job));
  last_submitted_ = std::max(last_submitted_, ListPosition::Of(record.job));
  if (IsTerminal(state)) {
    finished_.Add(
        record.job.owner(), id,
        google::protobuf::util::TimeUtil::TimestampToNanoseconds(record.job.finished_at()));
  }
  if (state == v1::JOB_STATE_QUEUED) queue_.push_back(id);
  if (!record.job.request_id().empty()) {
    requests_[{record.job.owner(), record.job.request_id()}] = id;
  }
  metrics_->Recovered(record.job);
  active_.Moved(record.job.owner(), v1::JOB_STATE_UNSPECIFIED, state);
  return record;
}

JobRecord* JobLifecycle::Find(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const JobRecord* JobLifecycle::Find(const std::string& job_id) const {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const JobRecord* JobLifecycle::FindRequest(const std::string& owner,
                                           const std::string& request_id) const {
  auto it = requests_.find({owner, request_id});
  return it == requests_.end() ? nullptr : Find(it->second);
}

std::vector<v1::Job> JobLifecycle::List() const {
  std::vector<v1::Job> out;
  out.reserve(order_.size());
  for (const ListPosition& p : order_) out.push_back(jobs_.at(p.job_id).job);
  return out;
}

std::vector<std::shared_ptr<EventLog>> JobLifecycle::Logs() const {
  std::vector<std::shared_ptr<EventLog>> out;
  out.reserve(jobs_.size());
  for (const auto& [id, record] : jobs_) out.push_back(record.log);
  return out;
}

v1::ListJobsResponse JobLifecycle::ListPage(const ListQuery& query) const {
  v1::ListJobsResponse page;
  auto it = query.has_after ? order_.upper_bound(query.after) : order_.begin();
  int scanned = 0;
  for (;
       it != order_.end() && page.jobs_size() < query.page_size && scanned < kMaxJobsScannedPerPage;
       ++it, ++scanned) {
    const v1::Job& job = jobs_.at(it->job_id).job;
    if (query.Matches(job)) *page.add_jobs() = Summarize(job);
  }
  // Where the page stopped, when jobs are left to look at.
  if (it != order_.end() && scanned > 0) page.set_next_page_token(PageToken(*std::prev(it)));
  return page;
}

StatusOr<v1::Job> JobLifecycle::Cancel(const std::string& job_id, const std::string& reason) {
  JobRecord* record = Find(job_id);
  if (record == nullptr) return Status::NotFound("no job \"" + job_id + "\"");
  const v1::JobState state = record->job.state();
  const std::string why = reason.empty() ? "cancelled by request" : reason;
  if (IsTerminal(state)) {
    return Status::FailedPrecondition("job " + job_id + " already ended " + StateLabel(state));
  }
  if (state == v1::JOB_STATE_QUEUED) {
    queue_.erase(std::remove(queue_.begin(), queue_.end(), job_id), queue_.end());
    SetState(record, v1::JOB_STATE_CANCELLED, why, v1::FAILURE_CLASS_CANCELLED);
    CountFailedAttempt(record, v1::FAILURE_CLASS_CANCELLED);
  } else if (state != v1::JOB_STATE_CANCELLING) {
    SetState(record, v1::JOB_STATE_CANCELLING, why, v1::FAILURE_CLASS_CANCELLED);
    SendCancel(*record, why);
  }
  return record->job;
}

StatusOr<v1::Job> JobLifecycle::Resume(const std::string& job_id) {
  JobRecord* record = Find(job_id);
  if (record == nullptr) return Status::NotFound("no job \"" + job_id + "\"");
  v1::Job& job = record->job;
  if (job.state() != v1::JOB_STATE_CANCELLED && job.state() != v1::JOB_STATE_FAILED) {
    return Status::FailedPrecondition("job " + job_id + " is " + StateLabel(job.state()) +
                                      ": only a cancelled or failed job can be resumed");
  }
  if (Status s = active_.Admit(job.owner(), "resumed"); !s.ok()) return s;
  finished_.Remove(job_id);
  RecordAttempt(&job, StateLabel(job.state()) + ": " + job.reason(), job.failure_class(),
                job.finished_at())
      ->set_resumed_by_request(true);
  NextAttempt(&job);
  job.clear_finished_at();
  queue_.push_back(job_id);
  SetState(record, v1::JOB_STATE_QUEUED,
           "resumed by request: attempt " + std::to_string(job.attempt()) + " resumes " +
               ResumesFrom(job));
  return job;
}

v1::Attempt* JobLifecycle::RecordAttempt(v1::Job* job, const std::string& reason,
                                         v1::FailureClass failure_class,
                                         const google::protobuf::Timestamp& ended_at) {
  v1::Attempt* ended = job->add_attempts();
  ended->set_number(job->attempt());
  *ended->mutable_ended_at() = ended_at;
  ended->set_reason(reason);
  ended->set_last_step(job->steps_done());
  ended->set_failure_class(failure_class);
  return ended;
}

void JobLifecycle::CountFailedAttempt(JobRecord* record, v1::FailureClass failure_class) {
  if (record->failure_counted_attempt == record->job.attempt()) return;
  record->failure_counted_attempt = record->job.attempt();
  metrics_->AttemptFailed(failure_class);
}

void JobLifecycle::NextAttempt(v1::Job* job) {
  job->set_attempt(job->attempt() + 1);
  // Until its plan says where it resumes (see EventIngest).
  job->set_steps_done(0);
  job->clear_worker_id();
}

void JobLifecycle::SetState(JobRecord* record, v1::JobState state, const std::string& reason,
                            v1::FailureClass failure_class) {
  v1::Job& job = record->job;
  const v1::JobState from = job.state();
  job.set_state(state);
  job.set_reason(reason);
  const bool ended_badly = state == v1::JOB_STATE_FAILED || state == v1::JOB_STATE_CANCELLED ||
                           state == v1::JOB_STATE_CANCELLING || state == v1::JOB_STATE_RESTARTING;
  job.set_failure_class(ended_badly ? failure_class : v1::FAILURE_CLASS_UNSPECIFIED);
  const bool terminal = IsTerminal(state);
  if (terminal) {
    *job.mutable_finished_at() = Now();
    finished_.Add(job.owner(), job.id(),
                  google::protobuf::util::TimeUtil::TimestampToNanoseconds(job.finished_at()));
    reports_->DropPending(job.id());
    spdlog::info("job {} {}{}{}", job.id(), StateLabel(state), reason.empty() ? "" : ": ", reason);
  }
  metrics_->StateChanged(job, from, state);
  active_.Moved(job.owner(), from, state);
  recorder_->Append(record, StateEvent(state, reason, job.worker_id()), terminal);
}

void JobLifecycle::EndEarly(JobRecord* record, v1::JobState state, const std::string& reason,
                            v1::FailureClass failure_class, bool permanent) {
  v1::Job& job = record->job;
  if (IsTerminal(job.state()) || job.state() == v1::JOB_STATE_RESTARTING) return;
  const bool cancelling = job.state() == v1::JOB_STATE_CANCELLING;
  // The other ranks cannot finish without this one.
  SendCancel(*record, "another rank of the job ended: " + reason);
  reports_->DropPending(job.id());
  CountFailedAttempt(record, cancelling ? v1::FAILURE_CLASS_CANCELLED : failure_class);
  const bool failed = !cancelling && state == v1::JOB_STATE_FAILED && !permanent;
  if (failed && SpendsNoRestart(failure_class)) {
    RecordAttempt(&job, reason, failure_class, Now());
    SetState(record, v1::JOB_STATE_RESTARTING,
             "attempt " + std::to_string(job.attempt()) + " stopped (" + reason + "); it " +
                 (failure_class == v1::FAILURE_CLASS_PREEMPTED ? "moves to another worker"
                                                               : "restarts") +
                 ", spending no restart",
             failure_class);
    return;
  }
  const int32_t restarts_used = RestartsUsed(job);
  if (failed && restarts_used < job.spec().max_restarts()) {
    RecordAttempt(&job, reason, failure_class, Now());
    metrics_->Restarted();
    SetState(record, v1::JOB_STATE_RESTARTING,
             "attempt " + std::to_string(job.attempt()) + " failed (" + reason + "); restart " +
                 std::to_string(restarts_used + 1) + " of " +
                 std::to_string(job.spec().max_restarts()),
             failure_class);
    return;
  }
  if (cancelling) {
    SetState(record, v1::JOB_STATE_CANCELLED, job.reason(), v1::FAILURE_CLASS_CANCELLED);
  } else {
    SetState(record, state, reason, failure_class);
  }
}

void JobLifecycle::RequeueIfStopped(JobRecord* record) {
  v1::Job& job = record->job;
  if (job.state() != v1::JOB_STATE_RESTARTING || !record->slots.empty()) return;
  NextAttempt(&job);
  SetState(record, v1::JOB_STATE_QUEUED,
           "attempt " + std::to_string(job.attempt()) + " waits for devices; it resumes " +
               ResumesFrom(job));
  // Ahead of jobs submitted after it: it was running.
  queue_.insert(queue_.begin(), job.id());
}

void JobLifecycle::LeaveWorker(JobRecord* record, const std::string& worker_id) {
  workers_->LeaveJob(worker_id, record->job.id());
  record->slots.erase(worker_id);
  if (record->slots.empty() && record->rendezvous_port != 0) {
    workers_->ReleasePort(record->rendezvous_worker, record->rendezvous_port);
    record->rendezvous_port = 0;
  }
}

void JobLifecycle::LoseRanks(JobRecord* record, const std::string& worker_id,
                             const std::string& reason) {
  LeaveWorker(record, worker_id);
  EndEarly(record, v1::JOB_STATE_FAILED, reason, v1::FAILURE_CLASS_WORKER_LOST);
  RequeueIfStopped(record);
}

void JobLifecycle::SendCancel(const JobRecord& record, const std::string& reason) {
  for (const auto& [worker_id, slots] : record.slots) {
    workers_->SendCancel(worker_id, record.job.id(), reason);
  }
}

void JobLifecycle::RankStatus(const std::string& worker_id, const v1::AssignmentStatus& status) {
  // A stale rank of the job (one it had stopped) ended: the job may be
  // placed on this worker again, once this status has been read as the
  // old attempt's (below, it changes nothing).
  if (WorkerRegistry::Worker* worker = workers_->Find(worker_id);
      worker != nullptr && IsTerminal(status.state())) {
    worker->draining.erase(status.job_id());
    if (status.failure_class() == v1::FAILURE_CLASS_PREEMPTED) worker->shutting_down = true;
  }
  JobRecord* record = Find(status.job_id());
  if (record != nullptr && status.attempt() > 0 && status.attempt() != record->job.attempt()) {
    StaleRankStatus(record, worker_id, status);
    return;
  }
  // A rank not (or no longer) placed here changes nothing else.
  if (record == nullptr || record->slots.count(worker_id) == 0) return;
  const v1::JobState current = record->job.state();
  if (status.state() == v1::JOB_STATE_RUNNING) {
    if (current == v1::JOB_STATE_STARTING) {
      *record->job.mutable_started_at() = Now();
      SetState(record, v1::JOB_STATE_RUNNING, "");
    }
    return;
  }
  if (!IsTerminal(status.state())) return;
  LeaveWorker(record, worker_id);
  if (current == v1::JOB_STATE_RESTARTING) {
    // A rank of the failed attempt stopped, whatever it says.
    RequeueIfStopped(record);
  } else if (status.state() != v1::JOB_STATE_SUCCEEDED) {
    // A cancel request keeps its own reason when the ranks stopped for it.
    const bool cancelled =
        current == v1::JOB_STATE_CANCELLING && status.state() == v1::JOB_STATE_CANCELLED;
    EndEarly(record, status.state(), cancelled ? record->job.reason() : status.reason(),
             status.failure_class(), status.permanent());
    RequeueIfStopped(record);
  } else if (record->slots.empty() && !IsTerminal(record->job.state())) {
    // Every rank finished (even if a cancel arrived too late to matter).
    SetState(record, v1::JOB_STATE_SUCCEEDED, "");
  }
}

void JobLifecycle::StaleRankStatus(JobRecord* record, const std::string& worker_id,
                                   const v1::AssignmentStatus& status) {
  if (!IsTerminal(status.state())) return;
  v1::JobEvent ended;
  ended.set_attempt(status.attempt());
  ended.set_stale(true);
  ended.mutable_log()->set_level(v1::LogMessage::LEVEL_INFO);
  ended.mutable_log()->set_text("attempt " + std::to_string(status.attempt()) + " on worker " +
                                worker_id + " ended " + StateLabel(status.state()) +
                                (status.reason().empty() ? "" : ": " + status.reason()));
  recorder_->Append(record, std::move(ended), /*closes=*/false);
  // Its ranks there held their slots until they ended: free now.
  if (record->slots.count(worker_id) > 0) {
    LeaveWorker(record, worker_id);
    RequeueIfStopped(record);
  }
}

void JobLifecycle::Prune() {
  if (keep_finished_ <= 0 || finished_.size() <= keep_finished_) return;
  EventRecorder::Batch batch(recorder_);
  // A job whose ranks are still stopping holds their slots: it stays until
  // they report (or are lost), or its slots would stay held for ever.
  const auto may_delete = [this](const std::string& id) {
    const auto job = jobs_.find(id);
    return job == jobs_.end() || job->second.slots.empty();
  };
  for (const std::string& id : finished_.BeyondRetention(keep_finished_, may_delete)) {
    finished_.Remove(id);
    const auto job = jobs_.find(id);
    if (job == jobs_.end()) continue;
    metrics_->Pruned(job->second.job.state());
    requests_.erase({job->second.job.owner(), job->second.job.request_id()});
    order_.erase(ListPosition::Of(job->second.job));
    jobs_.erase(job);  // a watcher still streaming holds the log itself
    reports_->Forget(id);
    recorder_->Delete(id);
  }
}

}  // namespace accumulus::server
