#include "server/scheduler.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <vector>

#include "common/device_name.h"
#include "common/job_spec.h"
#include "server/placement.h"

namespace accumulus::server {
namespace {

// The ranks an elastic job runs on now: as many as are free, up to its
// devices, that split its global batch (0: fewer than min_devices).
int32_t ElasticDevices(const v1::Job& job, int32_t free_slots) {
  for (int32_t d = std::min(job.spec().devices(), free_slots); d >= job.spec().min_devices(); --d) {
    if (job.batch().global_batch() % d == 0) return d;
  }
  return 0;
}

v1::JobEvent ElasticPlacementEvent(const v1::JobSpec& spec, const v1::BatchPlan& plan,
                                   int32_t devices) {
  v1::JobEvent placed;
  placed.mutable_log()->set_level(v1::LogMessage::LEVEL_INFO);
  placed.mutable_log()->set_text(
      "runs on " + std::to_string(devices) + " of " + std::to_string(spec.min_devices()) + ".." +
      std::to_string(spec.devices()) + " devices: global batch " +
      std::to_string(plan.global_batch()) +
      (plan.micro_batch() > 0
           ? " = micro_batch " + std::to_string(plan.micro_batch()) + " × accumulation " +
                 std::to_string(plan.accumulation_steps()) + " × " + std::to_string(devices)
           : " (micro_batch auto)"));
  return placed;
}

}  // namespace

Scheduler::Outcome Scheduler::Consider(JobRecord* record, int32_t pool, const std::string& sizes) {
  const v1::Job& job = record->job;
  const int32_t devices =
      job.spec().min_devices() > 0 ? job.spec().min_devices() : job.batch().devices();
  if (devices > pool) {
    const std::string reason = "needs " + std::to_string(devices) + " device slots; the pool has " +
                               std::to_string(pool) +
                               (sizes.empty() ? " (no worker connected)" : " (" + sizes + ")");
    if (job.reason() != reason) jobs_->SetState(record, v1::JOB_STATE_QUEUED, reason);
    return Outcome::kAside;
  }
  return Place(record) ? Outcome::kPlaced : Outcome::kBlocked;
}

void Scheduler::Schedule() {
  const int32_t pool = workers_->PoolSize();
  const std::string sizes = workers_->PoolDescription();
  std::vector<std::string>& queue = jobs_->queue();
  blocked_ = false;
  for (auto it = queue.begin(); it != queue.end();) {
    const Outcome outcome = Consider(jobs_->Find(*it), pool, sizes);
    if (outcome == Outcome::kBlocked) {
      blocked_ = true;
      break;
    }
    it = outcome == Outcome::kPlaced ? queue.erase(it) : std::next(it);
  }
  metrics_->WorkerPool(workers_->size(), workers_->PoolSize(), workers_->FreeSlotCount());
}

void Scheduler::ScheduleSubmitted() {
  std::vector<std::string>& queue = jobs_->queue();
  if (queue.empty()) return;
  JobRecord* record = jobs_->Find(queue.back());
  const int32_t pool = workers_->PoolSize();
  if (blocked_) {
    // Behind a job that waits for slots: it waits too, unless it is too
    // large for the pool (which it says).
    const int32_t devices = record->job.spec().min_devices() > 0 ? record->job.spec().min_devices()
                                                                 : record->job.batch().devices();
    if (devices <= pool) return;
  }
  const Outcome outcome = Consider(record, pool, workers_->PoolDescription());
  if (outcome == Outcome::kPlaced) queue.pop_back();
  blocked_ = blocked_ || outcome == Outcome::kBlocked;
  metrics_->WorkerPool(workers_->size(), workers_->PoolSize(), workers_->FreeSlotCount());
}

bool Scheduler::Place(JobRecord* record) {
  v1::Job& job = record->job;
  const v1::JobSpec& spec = job.spec();
  std::vector<WorkerSlots> free = workers_->FreeSlotsFor(job.id());
  int32_t free_count = 0;
  for (const WorkerSlots& w : free) free_count += static_cast<int32_t>(w.free_slots.size());
  const bool elastic = spec.min_devices() > 0;
  const int32_t devices = elastic ? ElasticDevices(job, free_count) : job.batch().devices();
  if (devices == 0) return false;
  std::optional<std::vector<RankSlot>> ranks = PlaceRanks(devices, std::move(free));
  if (!ranks) return false;
  StatusOr<v1::BatchPlan> plan =
      elastic ? PlanForDevices(spec, job.batch(), devices) : StatusOr<v1::BatchPlan>(job.batch());
  if (!plan.ok()) return false;

  // Rendezvous on rank 0's worker, on a port of its advertised range.
  const std::string& rank0 = ranks->front().worker_id;
  int port = 0;
  if (devices > 1) {
    port = workers_->TakePort(rank0);
    if (port == 0) return false;  // all of rank 0's ports are taken: wait
    record->rendezvous_port = port;
    record->rendezvous_worker = rank0;
    job.set_rendezvous_port(port);
  }
  if (elastic) {
    *job.mutable_batch() = *plan;
    recorder_->Append(record, ElasticPlacementEvent(spec, *plan, devices), /*closes=*/false);
  }
  job.set_worker_id(rank0);
  job.clear_placements();
  job.clear_runtime();
  std::map<std::string, v1::ControllerMessage> messages;  // one per worker
  for (int32_t rank = 0; rank < devices; ++rank) {
    const RankSlot& r = (*ranks)[static_cast<size_t>(rank)];
    const v1::Device& device = workers_->Find(r.worker_id)->registration.devices(r.slot);
    workers_->TakeSlot(r.worker_id, r.slot, job.id());
    record->slots[r.worker_id].push_back(r.slot);
    v1::RankPlacement* placement = job.add_placements();
    placement->set_rank(rank);
    placement->set_worker_id(r.worker_id);
    placement->set_device(DeviceName(device));
    placement->set_slot(r.slot);
    placement->set_memory_bytes(device.memory_bytes());

    v1::Assignment* assign = messages[r.worker_id].mutable_assign();
    assign->set_job_id(job.id());
    assign->add_ranks(rank);
    *assign->add_devices() = device;
  }
  jobs_->SetState(record, v1::JOB_STATE_STARTING, "");
  const std::string& rendezvous_host = workers_->Find(rank0)->registration.advertise_address();
  for (auto& [worker_id, message] : messages) {
    v1::Assignment* assign = message.mutable_assign();
    *assign->mutable_spec() = spec;
    *assign->mutable_batch() = job.batch();
    assign->set_world_size(devices);
    assign->set_rendezvous_host(rendezvous_host);
    assign->set_rendezvous_port(port);
    assign->set_attempt(job.attempt());
    workers_->Send(worker_id, message);
  }
  return true;
}

}  // namespace accumulus::server
