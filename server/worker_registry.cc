#include "server/worker_registry.h"

#include <algorithm>

namespace accumulus::server {

int32_t WorkerRegistry::Worker::free_slots() const {
  return static_cast<int32_t>(std::count(slot_jobs.begin(), slot_jobs.end(), std::string()));
}

WorkerRegistry::Worker* WorkerRegistry::Find(const std::string& worker_id) {
  auto it = workers_.find(worker_id);
  return it == workers_.end() ? nullptr : &it->second;
}

bool WorkerRegistry::Remove(const std::string& worker_id, uint64_t session) {
  auto it = workers_.find(worker_id);
  if (it == workers_.end() || it->second.session != session) return false;  // replaced
  workers_.erase(it);
  return true;
}

void WorkerRegistry::Send(const std::string& worker_id, const v1::ControllerMessage& message) {
  if (Worker* worker = Find(worker_id)) worker->sender(message);
}

void WorkerRegistry::SendCancel(const std::string& worker_id, const std::string& job_id,
                                const std::string& reason) {
  v1::ControllerMessage message;
  message.mutable_cancel()->set_job_id(job_id);
  message.mutable_cancel()->set_reason(reason);
  Send(worker_id, message);
}

void WorkerRegistry::LeaveJob(const std::string& worker_id, const std::string& job_id) {
  Worker* worker = Find(worker_id);
  if (worker == nullptr) return;
  worker->jobs.erase(job_id);
  for (std::string& holder : worker->slot_jobs) {
    if (holder == job_id) holder.clear();
  }
}

void WorkerRegistry::TakeSlot(const std::string& worker_id, int slot, const std::string& job_id) {
  Worker& worker = workers_.at(worker_id);
  worker.slot_jobs.at(static_cast<size_t>(slot)) = job_id;
  worker.jobs.insert(job_id);
}

int WorkerRegistry::TakePort(const std::string& worker_id) {
  Worker& worker = workers_.at(worker_id);
  const int first = worker.registration.rendezvous_port_first();
  for (int port = first; port < first + worker.registration.rendezvous_port_count(); ++port) {
    if (worker.ports_in_use.insert(port).second) return port;
  }
  return 0;
}

void WorkerRegistry::ReleasePort(const std::string& worker_id, int port) {
  if (Worker* worker = Find(worker_id)) worker->ports_in_use.erase(port);
}

std::vector<WorkerSlots> WorkerRegistry::FreeSlotsFor(const std::string& job_id) const {
  std::vector<WorkerSlots> free;
  for (const auto& [id, worker] : workers_) {
    if (worker.draining.count(job_id) > 0) continue;  // its old attempt still runs there
    if (worker.shutting_down) continue;
    WorkerSlots slots{id, {}};
    for (size_t i = 0; i < worker.slot_jobs.size(); ++i) {
      if (worker.slot_jobs[i].empty()) slots.free_slots.push_back(static_cast<int>(i));
    }
    free.push_back(std::move(slots));
  }
  return free;
}

int32_t WorkerRegistry::PoolSize() const {
  int32_t pool = 0;
  for (const auto& [id, worker] : workers_) pool += static_cast<int32_t>(worker.slot_jobs.size());
  return pool;
}

std::string WorkerRegistry::PoolDescription() const {
  std::string sizes;
  for (const auto& [id, worker] : workers_) {
    sizes += (sizes.empty() ? "" : ", ") + id + " " + std::to_string(worker.slot_jobs.size());
  }
  return sizes;
}

int64_t WorkerRegistry::FreeSlotCount() const {
  int64_t free = 0;
  for (const auto& [id, worker] : workers_) free += worker.free_slots();
  return free;
}

std::vector<v1::WorkerInfo> WorkerRegistry::Infos() const {
  std::vector<v1::WorkerInfo> out;
  for (const auto& [id, worker] : workers_) {
    v1::WorkerInfo info;
    info.set_id(id);
    info.set_hostname(worker.registration.hostname());
    *info.mutable_devices() = worker.registration.devices();
    info.set_free_slots(worker.free_slots());
    for (const auto& job : worker.jobs) info.add_job_ids(job);
    for (const auto& holder : worker.slot_jobs) info.add_device_jobs(holder);
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace accumulus::server
