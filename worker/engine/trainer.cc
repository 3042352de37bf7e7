#include "worker/engine/trainer.h"

#include <chrono>
#include <memory>

#include <torch/torch.h>

#include "common/step_plan.h"
#include "worker/engine/dataset.h"
#include "worker/engine/model_factory.h"
#include "worker/engine/memory_meter.h"
#include "worker/engine/process_group_sync.h"
#include "worker/engine/sample_order.h"
#include "worker/engine/state_dict.h"
#include "worker/engine/window_accumulator.h"

namespace accumulus::engine {
namespace {

using Clock = std::chrono::steady_clock;

torch::Tensor IndexTensor(const std::vector<int64_t>& order, const WindowRange& range) {
  return torch::from_blob(const_cast<int64_t*>(order.data() + range.begin), {range.size()},
                          torch::kInt64)
      .clone();
}

int64_t CountParameters(const torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

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

Batch ToDevice(Batch batch, const torch::Device& device) {
  if (device.is_cpu()) return batch;
  return {batch.inputs.to(device, /*non_blocking=*/true),
          batch.targets.to(device, /*non_blocking=*/true)};
}

Status TrainOrThrow(const TrainConfig& config, EventSink* sink, const TrainOptions& options) {
  StatusOr<torch::Device> device = ParseDevice(config.device);
  if (!device.ok()) return device.status();
  StatusOr<std::unique_ptr<MemoryMeter>> memory = MakeMemoryMeter(*device);
  if (!memory.ok()) return memory.status();

  SyntheticDataset data(config.data);
  torch::manual_seed(config.seed);
  StatusOr<BuiltModel> model =
      BuildModel(config.model, config.data.features, config.data.outputs);
  if (!model.ok()) return model.status();
  model->module->to(*device);
  std::vector<torch::Tensor> parameters = model->module->parameters();

  std::unique_ptr<GradientSync> sync;
  if (config.world_size > 1) {
    ProcessGroupConfig group;
    group.rank = config.rank;
    group.world_size = config.world_size;
    group.rendezvous_host = config.rendezvous_host;
    group.rendezvous_port = config.rendezvous_port;
    group.local_address = config.local_address;
    group.timeout = std::chrono::milliseconds(config.collective_timeout_ms);
    group.bucket_bytes = config.bucket_bytes;
    StatusOr<std::unique_ptr<GradientSync>> connected = ConnectProcessGroup(group);
    if (!connected.ok()) return connected.status();
    sync = std::move(*connected);
    // Every rank starts from rank 0's parameters, whatever its RNG did.
    sync->Broadcast(parameters);
  }
  StatusOr<std::unique_ptr<torch::optim::Optimizer>> optimizer =
      BuildOptimizer(config.optimizer, parameters);
  if (!optimizer.ok()) return optimizer.status();

  const LossKind loss = config.data.task == "classification" ? LossKind::kCrossEntropy
                                                              : LossKind::kMeanSquaredError;
  WindowAccumulator window(parameters, model->forward, loss, config.normalization,
                           config.accumulation_steps, config.max_grad_norm, sync.get());

  const int64_t samples = data.size();
  const StepPlan plan = PlanSteps(samples, config.global_batch, config.epochs, config.max_steps);
  RunReport run;
  run.device = config.device;
  run.parameters = CountParameters(*model->module);
  run.samples_per_epoch = samples;
  run.steps_per_epoch = plan.steps_per_epoch;
  run.steps_total = plan.steps_total;
  sink->OnRun(run);

  int64_t step = 0;
  for (int64_t epoch = 0; step < plan.steps_total; ++epoch) {
    const std::vector<int64_t> order = EpochPermutation(samples, config.seed, epoch);
    for (int64_t w = 0; w < plan.steps_per_epoch && step < plan.steps_total; ++w) {
      if (options.stop_requested && options.stop_requested->load()) {
        return Status::Cancelled("stopped at a window boundary after step " +
                                 std::to_string(step));
      }
      const auto start = Clock::now();
      (*memory)->ResetPeak();
      const WindowRange range = WindowOf(samples, config.global_batch, w);
      for (const WindowRange& micro : MicroBatchesOf(range, config.micro_batch,
                                                     config.accumulation_steps, config.rank)) {
        window.AddMicroBatch(ToDevice(data.Gather(IndexTensor(order, micro)), *device));
      }
      const WindowResult result = window.FinishWindow();
      (*optimizer)->step();
      // Freed, not zeroed: between windows no gradient memory is held.
      model->module->zero_grad(/*set_to_none=*/true);
      ++step;

      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      StepReport report;
      report.step = step;
      report.epoch = epoch;
      report.microbatches = result.microbatches;
      report.samples = result.samples;
      report.effective_batch = config.global_batch;
      report.loss_items = result.loss_items;
      report.loss = result.loss;
      report.lr = config.optimizer.lr;
      report.grad_norm = result.grad_norm;
      report.clipped = result.clipped;
      report.step_seconds = seconds;
      report.samples_per_second = seconds > 0 ? static_cast<double>(result.samples) / seconds : 0;
      report.tensor_bytes = (*memory)->current_bytes();
      report.tensor_peak_bytes = (*memory)->peak_bytes();
      report.steps_total = plan.steps_total;
      report.allreduce_calls = result.sync.allreduce_calls;
      report.allreduce_bytes = result.sync.bytes;
      report.comm_seconds = result.sync.seconds;
      sink->OnStep(report);
    }
  }
  if (config.rank == 0 && !config.output_path.empty()) {
    if (Status saved = SaveStateDict(*model->module, config.output_path); !saved.ok()) {
      return saved;
    }
    sink->OnLog(LogLevel::kInfo, "final parameters written to " + config.output_path);
  }
  if (options.final_parameters != nullptr) {
    options.final_parameters->clear();
    for (const auto& p : parameters) {
      options.final_parameters->push_back(p.detach().to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true));
    }
  }
  return Status::Ok();
}

}  // namespace

Status Train(const TrainConfig& config, EventSink* sink, const TrainOptions& options) {
  try {
    return TrainOrThrow(config, sink, options);
  } catch (const c10::Error& e) {
    return Status::Internal(std::string("LibTorch: ") + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Status::Internal(e.what());
  }
}

}  // namespace accumulus::engine
