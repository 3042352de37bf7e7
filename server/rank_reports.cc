#include "server/rank_reports.h"

#include <algorithm>

namespace accumulus::server {

bool RankReports::TakeNew(const std::string& job_id, int32_t attempt, int32_t rank,
                          int64_t sequence) {
  if (sequence <= 0) return true;  // not numbered: nothing to know it by
  int64_t& highest = received_[job_id][{attempt, rank}];
  if (sequence <= highest) return false;
  highest = sequence;
  return true;
}

void RankReports::NoteStored(const std::string& job_id, const v1::JobEvent& event) {
  TakeNew(job_id, event.attempt(), event.rank(), event.rank_sequence());
  // A merged data-parallel step keeps each rank's number.
  if (!event.has_step()) return;
  for (const v1::RankStepMetrics& rank : event.step().ranks()) {
    TakeNew(job_id, event.attempt(), rank.rank(), rank.rank_sequence());
  }
}

std::optional<v1::JobEvent> RankReports::Merge(const std::string& job_id, int32_t world_size,
                                               const std::string& worker_id, uint64_t link_sequence,
                                               const v1::JobEvent& event) {
  const int64_t step = event.step().step();
  std::map<int64_t, std::vector<Report>>& steps = pending_[job_id];
  std::vector<Report>& reports = steps[step];
  reports.push_back({worker_id, event.step(), event.rank_sequence(), link_sequence});
  held_[worker_id].insert(link_sequence);
  if (static_cast<int32_t>(reports.size()) < world_size) return std::nullopt;
  // The caller records the merged step: they hold nothing back any more.
  for (const Report& report : reports) Release(report);

  std::sort(reports.begin(), reports.end(),
            [](const Report& a, const Report& b) { return a.step.rank() < b.step.rank(); });
  v1::StepMetrics merged = reports.front().step;  // rank 0: global loss and counts
  for (const Report& report : reports) {
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
    rank->set_forward_seconds(r.forward_seconds());
    rank->set_backward_seconds(r.backward_seconds());
    rank->set_optimizer_seconds(r.optimizer_seconds());
  }
  steps.erase(step);
  v1::JobEvent out = event;
  // Every rank's number is in `ranks`.
  out.clear_rank();
  out.clear_rank_sequence();
  *out.mutable_step() = std::move(merged);
  return out;
}

void RankReports::DropPending(const std::string& job_id) {
  auto job = pending_.find(job_id);
  if (job == pending_.end()) return;
  for (const auto& [step, reports] : job->second) {
    for (const Report& report : reports) Release(report);
  }
  pending_.erase(job);
}

void RankReports::Forget(const std::string& job_id) {
  DropPending(job_id);
  received_.erase(job_id);
}

uint64_t RankReports::AcknowledgeableUpTo(const std::string& worker_id, uint64_t processed) const {
  auto held = held_.find(worker_id);
  if (held == held_.end() || held->second.empty()) return processed;
  return std::min(processed, *held->second.begin() - 1);
}

void RankReports::Release(const Report& report) {
  auto worker = held_.find(report.worker_id);
  if (worker == held_.end()) return;
  std::multiset<uint64_t>& held = worker->second;
  if (auto it = held.find(report.link_sequence); it != held.end()) held.erase(it);
  if (held.empty()) held_.erase(worker);
}

}  // namespace accumulus::server
