#include "worker/device_inventory.h"

#include <spdlog/spdlog.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "common/cgroup_limits.h"

namespace accumulus::worker {
namespace {

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "cpu";
}

// Runs `accumulus-trainer --probe-devices`, which prints one line per CUDA
// device: "cuda <index> <memory bytes> <name>". The daemon itself does not
// load LibTorch.
std::vector<v1::Device> ProbeCuda(const std::string& trainer_binary) {
  std::vector<v1::Device> devices;
  const std::string command = "'" + trainer_binary + "' --probe-devices 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return devices;
  std::array<char, 512> buffer;
  while (fgets(buffer.data(), buffer.size(), pipe.get()) != nullptr) {
    std::istringstream line(buffer.data());
    std::string kind;
    int index = 0;
    int64_t memory = 0;
    if (!(line >> kind >> index >> memory) || kind != "cuda") continue;
    std::string name;
    std::getline(line >> std::ws, name);
    v1::Device d;
    d.set_kind(v1::DEVICE_KIND_CUDA);
    d.set_index(index);
    d.set_memory_bytes(memory);
    d.set_name(name);
    d.set_cores(1);
    devices.push_back(d);
  }
  return devices;
}

}  // namespace

StatusOr<std::vector<v1::Device>> DiscoverDevices(const InventoryOptions& options) {
  if (options.cpu_slots < 0) {
    return Status::InvalidArgument("--cpu-slots " + std::to_string(options.cpu_slots) +
                                   " must not be negative");
  }
  if (!(options.cpu_memory_fraction > 0 && options.cpu_memory_fraction <= 1)) {
    return Status::InvalidArgument("--cpu-memory-fraction " +
                                   std::to_string(options.cpu_memory_fraction) +
                                   " must be in (0, 1]");
  }
  std::vector<v1::Device> devices = ProbeCuda(options.trainer_binary);
  const int cores = UsableCores();
  const int slots = options.cpu_slots > 0 ? options.cpu_slots : (devices.empty() ? 1 : 0);
  if (slots > cores) {
    return Status::InvalidArgument("--cpu-slots " + std::to_string(slots) + " exceeds the " +
                                   std::to_string(cores) +
                                   " cores this worker may use (ranks would oversubscribe them)");
  }
  const std::string model = CpuModel();
  const int64_t memory =
      static_cast<int64_t>(static_cast<double>(UsableMemoryBytes()) * options.cpu_memory_fraction);
  for (int i = 0; i < slots; ++i) {
    v1::Device d;
    d.set_kind(v1::DEVICE_KIND_CPU);
    d.set_index(i);
    d.set_name(model);
    d.set_cores(cores / slots);
    d.set_memory_bytes(memory / slots);
    devices.push_back(d);
  }
  return devices;
}

}  // namespace accumulus::worker
