// Where the ranks of a gang-scheduled job go: all N or none, packed onto as
// few workers as possible.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace accumulus::server {

struct WorkerSlots {
  std::string worker_id;
  std::vector<int> free_slots;  // indices into the worker's devices
};

struct RankSlot {
  std::string worker_id;
  int slot = 0;
};

// Ranks 0..devices-1 in order, or nothing when fewer than `devices` slots
// are free. A job that fits on one worker goes to the one with the fewest
// free slots that can hold it (best fit); a larger job spans workers taken
// by most free slots first (ties: by id), which needs the fewest of them.
std::optional<std::vector<RankSlot>> PlaceRanks(int devices, std::vector<WorkerSlots> workers);

}  // namespace accumulus::server
