#include "server/placement.h"

#include <algorithm>

namespace accumulus::server {

std::optional<std::vector<RankSlot>> PlaceRanks(int devices, std::vector<WorkerSlots> workers) {
  // Best fit: the job fits on one worker; take the one it fills most, so the
  // larger holes stay for larger jobs.
  const WorkerSlots* best = nullptr;
  for (const WorkerSlots& w : workers) {
    if (static_cast<int>(w.free_slots.size()) < devices) continue;
    if (best == nullptr || w.free_slots.size() < best->free_slots.size() ||
        (w.free_slots.size() == best->free_slots.size() && w.worker_id < best->worker_id)) {
      best = &w;
    }
  }
  if (best != nullptr) {
    std::vector<RankSlot> ranks;
    for (int i = 0; i < devices; ++i) ranks.push_back({best->worker_id, best->free_slots[i]});
    return ranks;
  }
  // Otherwise span workers, the emptiest first: the fewest workers.
  std::stable_sort(workers.begin(), workers.end(), [](const WorkerSlots& a, const WorkerSlots& b) {
    if (a.free_slots.size() != b.free_slots.size()) {
      return a.free_slots.size() > b.free_slots.size();
    }
    return a.worker_id < b.worker_id;
  });
  std::vector<RankSlot> ranks;
  for (const WorkerSlots& w : workers) {
    for (int slot : w.free_slots) {
      if (static_cast<int>(ranks.size()) == devices) return ranks;
      ranks.push_back({w.worker_id, slot});
    }
  }
  if (static_cast<int>(ranks.size()) == devices) return ranks;
  return std::nullopt;
}

}  // namespace accumulus::server
