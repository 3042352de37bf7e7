#include "worker/engine/run_setup.h"

#include <chrono>

namespace accumulus::engine {

StatusOr<torch::Device> ParseDevice(const std::string& name) {
  try {
    torch::Device device(name);
    if (device.is_cuda() && !torch::cuda::is_available()) {
      return Status::FailedPrecondition("device \"" + name + "\": LibTorch sees no CUDA device");
    }
    return device;
  } catch (const c10::Error&) {
    return Status::InvalidArgument("device \"" + name + "\" is not a device (\"cpu\", \"cuda:0\")");
  }
}

WindowScheduleConfig ScheduleOf(const TrainConfig& c, int64_t samples, int64_t micro_batch,
                                int64_t accumulation_steps) {
  WindowScheduleConfig schedule;
  schedule.samples_per_epoch = samples;
  schedule.micro_batch = micro_batch;
  schedule.devices = c.world_size;
  schedule.accumulation_steps = accumulation_steps;
  schedule.nominal_batch = c.nominal_batch;
  schedule.warmup_steps = c.lr_schedule.warmup_steps;
  schedule.policy = c.partial_window;
  schedule.epochs = c.epochs;
  schedule.max_steps = c.max_steps;
  return schedule;
}

void SetHyperparameters(torch::optim::Optimizer& optimizer, double lr, double weight_decay) {
  for (auto& group : optimizer.param_groups()) {
    group.options().set_lr(lr);
    if (auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&group.options())) {
      sgd->weight_decay(weight_decay);
    } else if (auto* adamw = dynamic_cast<torch::optim::AdamWOptions*>(&group.options())) {
      adamw->weight_decay(weight_decay);
    }
  }
}

StatusOr<std::unique_ptr<GradientSync>> ConnectRanks(const TrainConfig& config,
                                                     const torch::Device& device,
                                                     const std::vector<torch::Tensor>& parameters) {
  if (config.world_size <= 1) return std::unique_ptr<GradientSync>();
  ProcessGroupConfig group;
  group.rank = config.rank;
  group.world_size = config.world_size;
  group.rendezvous_host = config.rendezvous_host;
  group.rendezvous_port = config.rendezvous_port;
  group.local_address = config.local_address;
  group.device = device;
  group.timeout = std::chrono::milliseconds(config.collective_timeout_ms);
  group.bucket_bytes = config.bucket_bytes;
  StatusOr<std::unique_ptr<GradientSync>> sync = ConnectProcessGroup(group);
  if (!sync.ok()) return sync.status();
  // Every rank starts from rank 0's parameters, whatever its RNG did.
  (*sync)->Broadcast(parameters);
  return sync;
}

}  // namespace accumulus::engine
