#include "server/job_metrics.h"

#include <algorithm>
#include <vector>

#include "common/enum_names.h"
#include "server/job_state.h"

namespace accumulus::server {

void JobMetrics::StateChanged(const v1::Job& job, v1::JobState from, v1::JobState to) {
  if (from != v1::JOB_STATE_UNSPECIFIED)
    metrics_->jobs->WithLabels({StateLabel(from)})->Decrement();
  metrics_->jobs->WithLabels({StateLabel(to)})->Increment();
  if (IsTerminal(to)) RemoveJobSeries(job);
}

void JobMetrics::AttemptFailed(v1::FailureClass failure_class) {
  const std::string name = NameOf(failure_class);
  metrics_->attempts_failed->WithLabels({name.empty() ? "unspecified" : name})->Increment();
}

void JobMetrics::Recovered(v1::JobState state) {
  metrics_->jobs->WithLabels({StateLabel(state)})->Increment();
}

void JobMetrics::Pruned(v1::JobState state) {
  metrics_->jobs->WithLabels({StateLabel(state)})->Decrement();
}

void JobMetrics::StepRecorded(const std::string& job_id, const v1::StepMetrics& step) {
  const std::vector<std::string> labels{job_id};
  metrics_->job_steps->WithLabels(labels)->Increment();
  metrics_->job_loss->WithLabels(labels)->Set(step.loss());
  metrics_->job_samples_per_second->WithLabels(labels)->Set(step.samples_per_second());
  metrics_->job_effective_batch->WithLabels(labels)->Set(
      static_cast<double>(step.effective_batch()));
  metrics_->job_step_seconds->WithLabels(labels)->Observe(step.step_seconds());
  if (step.ranks_size() == 0) {
    v1::RankStepMetrics only;
    only.set_tensor_bytes(step.tensor_bytes());
    only.set_tensor_peak_bytes(step.tensor_peak_bytes());
    only.set_process_rss_bytes(step.process_rss_bytes());
    only.set_allocator_reserved_bytes(step.allocator_reserved_bytes());
    only.set_allocator_retries(step.allocator_retries());
    RankMemory(job_id, only);
  }
  for (const v1::RankStepMetrics& rank : step.ranks()) RankMemory(job_id, rank);
}

void JobMetrics::WorkerPool(int64_t workers, int64_t free_slots) {
  metrics_->workers_connected->Set(static_cast<double>(workers));
  metrics_->device_slots_free->Set(static_cast<double>(free_slots));
}

void JobMetrics::RankMemory(const std::string& job_id, const v1::RankStepMetrics& rank) {
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

void JobMetrics::RemoveJobSeries(const v1::Job& job) {
  const std::vector<std::string> labels{job.id()};
  metrics_->job_steps->Remove(labels);
  metrics_->job_loss->Remove(labels);
  metrics_->job_samples_per_second->Remove(labels);
  metrics_->job_effective_batch->Remove(labels);
  metrics_->job_step_seconds->Remove(labels);
  for (int32_t rank = 0; rank < std::max(1, job.batch().devices()); ++rank) {
    const std::vector<std::string> rank_labels{job.id(), std::to_string(rank)};
    for (auto* family : {metrics_->job_tensor_bytes, metrics_->job_tensor_peak_bytes,
                         metrics_->job_process_rss_bytes, metrics_->job_allocator_reserved_bytes,
                         metrics_->job_allocator_retries}) {
      family->Remove(rank_labels);
    }
  }
}

}  // namespace accumulus::server
