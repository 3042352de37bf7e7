#include "server/job_metrics.h"

#include "common/clock.h"
#include "common/enum_names.h"
#include "server/job_state.h"

namespace accumulus::server {
namespace {

double UnixSeconds() {
  const google::protobuf::Timestamp now = Now();
  return static_cast<double>(now.seconds()) + now.nanos() * 1e-9;
}

constexpr const char* kPhases[] = {"forward", "backward", "allreduce", "optimizer"};

// A single-device job's step carries its one rank's figures itself: the
// same as a data-parallel step's entry in `ranks`.
v1::RankStepMetrics OnlyRankOf(const v1::StepMetrics& step) {
  v1::RankStepMetrics only;
  only.set_rank(step.rank());
  only.set_allreduce_bytes(step.allreduce_bytes());
  only.set_comm_seconds(step.comm_seconds());
  only.set_step_seconds(step.step_seconds());
  only.set_tensor_bytes(step.tensor_bytes());
  only.set_tensor_peak_bytes(step.tensor_peak_bytes());
  only.set_process_rss_bytes(step.process_rss_bytes());
  only.set_allocator_reserved_bytes(step.allocator_reserved_bytes());
  only.set_allocator_retries(step.allocator_retries());
  only.set_forward_seconds(step.forward_seconds());
  only.set_backward_seconds(step.backward_seconds());
  only.set_optimizer_seconds(step.optimizer_seconds());
  return only;
}

}  // namespace

void JobMetrics::StateChanged(const v1::Job& job, v1::JobState from, v1::JobState to) {
  if (from != v1::JOB_STATE_UNSPECIFIED)
    metrics_->jobs->WithLabels({StateLabel(from)})->Decrement();
  metrics_->jobs->WithLabels({StateLabel(to)})->Increment();

  Series& series = series_[job.id()];
  series.expires_at.reset();
  const std::vector<std::string> labels{job.id()};
  metrics_->job_running->WithLabels(labels)->Set(to == v1::JOB_STATE_RUNNING ? 1 : 0);
  metrics_->job_attempt->WithLabels(labels)->Set(std::max(1, job.attempt()));
  if (to == v1::JOB_STATE_QUEUED) series.queued_since = now_();
  if (to == v1::JOB_STATE_STARTING) {
    if (from == v1::JOB_STATE_QUEUED && series.queued_since) {
      metrics_->queue_wait_seconds->Observe(
          std::chrono::duration<double>(now_() - *series.queued_since).count());
    }
    series.queued_since.reset();
    // A new attempt: its ranks may run elsewhere, in new processes.
    RemoveRankSeries(&series);
    metrics_->job_devices->WithLabels(labels)->Set(job.placements_size());
    for (const v1::RankPlacement& placement : job.placements()) {
      const int64_t budget = job.spec().memory_limit_bytes() > 0 ? job.spec().memory_limit_bytes()
                                                                 : placement.memory_bytes();
      const std::vector<std::string> rank =
          RankLabels(job, placement.rank(), placement.worker_id());
      series.rank_labels.insert(rank);
      metrics_->rank_memory_budget_bytes->WithLabels(rank)->Set(static_cast<double>(budget));
      // Counted from 0, so that a query over them has a series from the start.
      metrics_->rank_oom_retries->WithLabels(rank);
      metrics_->rank_allocator_retries->WithLabels(rank);
    }
    // Counted from 0 too.
    metrics_->job_checkpoints->WithLabels(labels);
    metrics_->job_checkpoint_failures->WithLabels(labels);
    metrics_->job_batch_changes->WithLabels(labels);
  }
  if (to == v1::JOB_STATE_RUNNING)
    metrics_->job_last_progress->WithLabels(labels)->Set(UnixSeconds());
  if (IsTerminal(to)) {
    metrics_->jobs_finished->WithLabels({StateLabel(to)})->Increment();
    series.expires_at = now_() + retention_;
    expiring_.emplace(*series.expires_at, job.id());
    ExpireFinished();
  }
}

void JobMetrics::AttemptFailed(v1::FailureClass failure_class) {
  const std::string name = NameOf(failure_class);
  metrics_->attempts_failed->WithLabels({name.empty() ? "unspecified" : name})->Increment();
}

void JobMetrics::Recovered(const v1::Job& job) {
  metrics_->jobs->WithLabels({StateLabel(job.state())})->Increment();
  if (job.state() == v1::JOB_STATE_RUNNING) {
    // Its trainers may still be at it: progress counts from now.
    series_.try_emplace(job.id());
    metrics_->job_running->WithLabels({job.id()})->Set(1);
    metrics_->job_attempt->WithLabels({job.id()})->Set(std::max(1, job.attempt()));
    metrics_->job_last_progress->WithLabels({job.id()})->Set(UnixSeconds());
    metrics_->job_checkpoints->WithLabels({job.id()});
    metrics_->job_checkpoint_failures->WithLabels({job.id()});
    metrics_->job_batch_changes->WithLabels({job.id()});
  }
}

void JobMetrics::Pruned(v1::JobState state) {
  metrics_->jobs->WithLabels({StateLabel(state)})->Decrement();
}

void JobMetrics::StepRecorded(const v1::Job& job, const v1::StepMetrics& step) {
  Series& series = series_[job.id()];
  const std::vector<std::string> labels{job.id()};
  metrics_->job_steps->WithLabels(labels)->Increment();
  metrics_->job_samples->WithLabels(labels)->Increment(static_cast<double>(step.samples()));
  metrics_->job_tokens->WithLabels(labels)->Increment(static_cast<double>(step.tokens()));
  metrics_->job_skipped_steps->WithLabels(labels)->Increment(step.skipped() ? 1 : 0);
  metrics_->job_clipped_steps->WithLabels(labels)->Increment(step.clipped() ? 1 : 0);
  metrics_->job_loss->WithLabels(labels)->Set(step.loss());
  metrics_->job_samples_per_second->WithLabels(labels)->Set(step.samples_per_second());
  metrics_->job_effective_batch->WithLabels(labels)->Set(
      static_cast<double>(step.effective_batch()));
  metrics_->job_micro_batch->WithLabels(labels)->Set(
      static_cast<double>(job.batch().micro_batch()));
  metrics_->job_accumulation_steps->WithLabels(labels)->Set(
      static_cast<double>(job.batch().accumulation_steps()));
  metrics_->job_learning_rate->WithLabels(labels)->Set(step.lr());
  metrics_->job_grad_norm->WithLabels(labels)->Set(step.grad_norm());
  metrics_->job_loss_scale->WithLabels(labels)->Set(step.loss_scale());
  // 0 while measured but not yet estimated (the averaged |G|² not positive).
  if (step.has_noise()) {
    metrics_->job_noise_scale->WithLabels(labels)->Set(step.noise().noise_scale());
  }
  metrics_->job_step_seconds->WithLabels(labels)->Observe(step.step_seconds());
  metrics_->job_last_progress->WithLabels(labels)->Set(UnixSeconds());
  if (step.ranks_size() == 0) Rank(job, &series, OnlyRankOf(step));
  for (const v1::RankStepMetrics& rank : step.ranks()) Rank(job, &series, rank);
}

void JobMetrics::Rank(const v1::Job& job, Series* series, const v1::RankStepMetrics& rank) {
  const std::vector<std::string> labels = RankLabels(job, rank.rank(), rank.worker_id());
  series->rank_labels.insert(labels);
  const double phases[] = {rank.forward_seconds(), rank.backward_seconds(), rank.comm_seconds(),
                           rank.optimizer_seconds()};
  for (size_t i = 0; i < std::size(kPhases); ++i) {
    std::vector<std::string> phase = labels;
    phase.push_back(kPhases[i]);
    metrics_->rank_phase_seconds->WithLabels(phase)->Observe(phases[i]);
  }
  metrics_->rank_allreduce_bytes->WithLabels(labels)->Increment(
      static_cast<double>(rank.allreduce_bytes()));
  metrics_->rank_allreduce_seconds->WithLabels(labels)->Increment(rank.comm_seconds());
  metrics_->rank_tensor_bytes->WithLabels(labels)->Set(static_cast<double>(rank.tensor_bytes()));
  metrics_->rank_tensor_peak_bytes->WithLabels(labels)->Set(
      static_cast<double>(rank.tensor_peak_bytes()));
  metrics_->rank_process_rss_bytes->WithLabels(labels)->Set(
      static_cast<double>(rank.process_rss_bytes()));
  metrics_->rank_allocator_reserved_bytes->WithLabels(labels)->Set(
      static_cast<double>(rank.allocator_reserved_bytes()));
  // The trainer counts since it started; the counter takes what is new.
  int64_t& seen = series->allocator_retries[rank.rank()];
  metrics_->rank_allocator_retries->WithLabels(labels)->Increment(
      static_cast<double>(std::max<int64_t>(0, rank.allocator_retries() - seen)));
  seen = std::max(seen, rank.allocator_retries());
}

void JobMetrics::SplitChanged(const v1::Job& job, const v1::SplitChange& split) {
  const std::vector<std::string> labels = RankLabels(job, split.rank(), /*worker_id=*/"");
  series_[job.id()].rank_labels.insert(labels);
  metrics_->rank_oom_retries->WithLabels(labels)->Increment();
}

void JobMetrics::CheckpointWritten(const v1::Job& job) {
  series_.try_emplace(job.id());
  metrics_->job_checkpoints->WithLabels({job.id()})->Increment();
}

void JobMetrics::CheckpointFailed(const v1::Job& job) {
  series_.try_emplace(job.id());
  metrics_->job_checkpoint_failures->WithLabels({job.id()})->Increment();
}

void JobMetrics::BatchChanged(const v1::Job& job) {
  series_.try_emplace(job.id());
  metrics_->job_batch_changes->WithLabels({job.id()})->Increment();
}

void JobMetrics::WorkerPool(int64_t workers, int64_t slots, int64_t free_slots) {
  metrics_->workers_connected->Set(static_cast<double>(workers));
  metrics_->device_slots->Set(static_cast<double>(slots));
  metrics_->device_slots_busy->Set(static_cast<double>(slots - free_slots));
}

void JobMetrics::ExpireFinished() {
  const auto now = now_();
  while (!expiring_.empty() && expiring_.begin()->first <= now) {
    const auto [deadline, job_id] = *expiring_.begin();
    expiring_.erase(expiring_.begin());
    auto it = series_.find(job_id);
    // Not if the job was resumed since (or finished again, later).
    if (it != series_.end() && it->second.expires_at == deadline) RemoveJobSeries(job_id);
  }
}

std::vector<std::string> JobMetrics::RankLabels(const v1::Job& job, int32_t rank,
                                                const std::string& worker_id) const {
  std::string worker = worker_id;
  if (worker.empty() && rank >= 0 && rank < job.placements_size()) {
    worker = job.placements(rank).worker_id();
  }
  if (worker.empty()) worker = job.worker_id();
  return {job.id(), std::to_string(rank), worker};
}

void JobMetrics::RemoveRankSeries(Series* series) {
  for (const std::vector<std::string>& labels : series->rank_labels) {
    for (auto* family : {metrics_->rank_tensor_bytes, metrics_->rank_tensor_peak_bytes,
                         metrics_->rank_memory_budget_bytes, metrics_->rank_process_rss_bytes,
                         metrics_->rank_allocator_reserved_bytes}) {
      family->Remove(labels);
    }
    for (auto* family : {metrics_->rank_allreduce_bytes, metrics_->rank_allreduce_seconds,
                         metrics_->rank_allocator_retries, metrics_->rank_oom_retries}) {
      family->Remove(labels);
    }
    for (const char* name : kPhases) {
      std::vector<std::string> phase = labels;
      phase.push_back(name);
      metrics_->rank_phase_seconds->Remove(phase);
    }
  }
  series->rank_labels.clear();
  series->allocator_retries.clear();
}

void JobMetrics::RemoveJobSeries(const std::string& job_id) {
  auto it = series_.find(job_id);
  if (it == series_.end()) return;
  RemoveRankSeries(&it->second);
  const std::vector<std::string> labels{job_id};
  for (auto* family :
       {metrics_->job_running, metrics_->job_attempt, metrics_->job_last_progress,
        metrics_->job_loss, metrics_->job_samples_per_second, metrics_->job_effective_batch,
        metrics_->job_micro_batch, metrics_->job_accumulation_steps, metrics_->job_devices,
        metrics_->job_learning_rate, metrics_->job_grad_norm, metrics_->job_loss_scale,
        metrics_->job_noise_scale}) {
    family->Remove(labels);
  }
  for (auto* family :
       {metrics_->job_steps, metrics_->job_samples, metrics_->job_tokens,
        metrics_->job_skipped_steps, metrics_->job_clipped_steps, metrics_->job_checkpoints,
        metrics_->job_checkpoint_failures, metrics_->job_batch_changes}) {
    family->Remove(labels);
  }
  metrics_->job_step_seconds->Remove(labels);
  series_.erase(it);
}

}  // namespace accumulus::server
