#include "server/event_ingest.h"

#include <optional>

#include "server/job_state.h"

namespace accumulus::server {

void EventIngest::Record(const std::string& worker_id, const v1::TrainerEvents& events,
                         uint64_t link_sequence) {
  JobRecord* record = jobs_->Find(events.job_id());
  if (record == nullptr) return;  // pruned
  if (IsStale(*record, worker_id, events.attempt())) {
    // Untagged late events (nothing to file them under) are dropped.
    if (events.attempt() > 0) RecordStale(record, events);
    return;
  }
  const std::string& id = record->job.id();
  const int32_t attempt = record->job.attempt();
  EventRecorder::Batch batch(recorder_);
  for (const v1::JobEvent& event : events.events()) {
    if (!reports_->TakeNew(id, attempt, event.rank(), event.rank_sequence())) continue;
    if (event.has_step() && record->job.batch().devices() > 1) {
      std::optional<v1::JobEvent> merged =
          reports_->Merge(id, record->job.batch().devices(), worker_id, link_sequence, event);
      if (merged) RecordStep(record, std::move(*merged));
    } else if (event.has_step()) {
      RecordStep(record, event);
    } else {
      ApplyPlan(record, event);
      v1::JobEvent copy = event;
      copy.clear_sequence();
      copy.set_attempt(attempt);
      recorder_->Append(record, std::move(copy), /*closes=*/false);
    }
  }
}

bool EventIngest::IsStale(const JobRecord& record, const std::string& worker_id, int32_t attempt) {
  if (attempt > 0 && attempt != record.job.attempt()) return true;
  const v1::JobState state = record.job.state();
  return record.slots.count(worker_id) == 0 || IsTerminal(state) ||
         state == v1::JOB_STATE_RESTARTING;
}

void EventIngest::RecordStale(JobRecord* record, const v1::TrainerEvents& events) {
  const int32_t attempt = events.attempt();
  EventRecorder::Batch batch(recorder_);
  for (const v1::JobEvent& event : events.events()) {
    if (!reports_->TakeNew(record->job.id(), attempt, event.rank(), event.rank_sequence())) {
      continue;
    }
    v1::JobEvent copy = event;
    copy.clear_sequence();
    copy.set_attempt(attempt);
    copy.set_stale(true);
    if (copy.has_step()) copy.mutable_step()->set_attempt(attempt);
    recorder_->Append(record, std::move(copy), /*closes=*/false);
  }
}

void EventIngest::RecordStep(JobRecord* record, v1::JobEvent event) {
  event.mutable_step()->set_attempt(record->job.attempt());
  event.set_attempt(record->job.attempt());
  event.clear_sequence();
  record->job.set_steps_done(event.step().step());
  // Adaptive accumulation recounts the steps when it changes the batch.
  if (event.step().steps_total() > 0) record->job.set_steps_total(event.step().steps_total());
  *record->job.mutable_last_step() = event.step();
  metrics_->StepRecorded(record->job, event.step());
  recorder_->Append(record, std::move(event), /*closes=*/false);
}

void EventIngest::ApplyPlan(JobRecord* record, const v1::JobEvent& event) {
  v1::Job& job = record->job;
  // The trainer's plan is authoritative (file data sets are sized only once
  // read).
  if (event.has_runtime() && event.runtime().rank() == 0) {
    const v1::RuntimeInfo& runtime = event.runtime();
    *job.mutable_runtime() = runtime;
    job.set_steps_total(runtime.steps_total());
    // A resumed attempt continues after its checkpoint's step. Steps the
    // last attempt trained and checkpointed but whose events died with it (a
    // killed worker's unsent buffer) are said to be so.
    const int64_t resumed = runtime.resumed_from_step();
    const int64_t reported = job.attempts_size() > 0 ? job.attempts().rbegin()->last_step() : 0;
    if (resumed > reported) {
      v1::JobEvent lost;
      lost.mutable_log()->set_level(v1::LogMessage::LEVEL_WARNING);
      lost.mutable_log()->set_text("steps " + std::to_string(reported + 1) + " to " +
                                   std::to_string(resumed) + " were trained and checkpointed by " +
                                   "attempt " + std::to_string(job.attempt() - 1) +
                                   ", but their metrics were lost with it");
      recorder_->Append(record, std::move(lost), /*closes=*/false);
    }
    job.set_steps_done(resumed);
    // micro_batch: auto is decided there too.
    if (runtime.batch().micro_batch() > 0) *job.mutable_batch() = runtime.batch();
  }
  // The batch plan is the controller's: a rank that had to change its split
  // says so, and the plan shows the smallest micro-batch a rank runs.
  if (event.has_split() && event.split().micro_batch() > 0 &&
      (job.batch().micro_batch() == 0 || event.split().micro_batch() < job.batch().micro_batch())) {
    job.mutable_batch()->set_micro_batch(event.split().micro_batch());
    job.mutable_batch()->set_accumulation_steps(event.split().accumulation_steps());
  }
  if (event.has_split()) metrics_->SplitChanged(job, event.split());
  // Adaptive accumulation: the plan shows the global batch in force (the
  // micro-batch stays; accumulation follows).
  if (event.has_batch_change() && event.batch_change().global_batch() > 0) {
    v1::BatchPlan& batch = *job.mutable_batch();
    batch.set_global_batch(event.batch_change().global_batch());
    if (batch.micro_batch() > 0 && batch.devices() > 0) {
      batch.set_accumulation_steps(batch.global_batch() / (batch.micro_batch() * batch.devices()));
    }
    metrics_->BatchChanged(job);
  }
  if (event.has_checkpoint()) metrics_->CheckpointWritten(job);
  if (event.has_checkpoint_failed()) metrics_->CheckpointFailed(job);
}

}  // namespace accumulus::server
