#include "worker/engine/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>

#include "common/batch_arithmetic.h"
#include "common/window_schedule.h"
#include "worker/engine/checkpoint.h"
#include "worker/engine/dataset.h"
#include "worker/engine/memory_meter.h"
#include "worker/engine/micro_batch_probe.h"
#include "worker/engine/model_factory.h"
#include "worker/engine/process_group_sync.h"
#include "worker/engine/sample_order.h"
#include "worker/engine/state_dict.h"
#include "worker/engine/thread_setup.h"
#include "worker/engine/thread_split.h"
#include "worker/engine/trial_scope.h"
#include "worker/engine/window_accumulator.h"

namespace accumulus::engine {
namespace {

using Clock = std::chrono::steady_clock;

// Below this micro-batch size, BatchNorm's per-micro-batch statistics are
// noisy enough to warn about (a common rule of thumb is 32).
constexpr int64_t kSmallBatchNormBatch = 32;

torch::Tensor IndexTensor(const std::vector<int64_t>& order, const WindowRange& range) {
  return torch::from_blob(const_cast<int64_t*>(order.data() + range.begin), {range.size()},
                          torch::kInt64)
      .clone();
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

// Sets every parameter group's learning rate and weight decay (for the
// optimizers BuildOptimizer makes).
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

// The samples of a window, in stream order: the permutation of each epoch it
// touches (computed once per epoch).
class SampleStream {
 public:
  SampleStream(int64_t samples, uint64_t seed) : samples_(samples), seed_(seed) {}

  std::vector<int64_t> Collect(const Window& window) {
    std::vector<int64_t> out;
    out.reserve(static_cast<size_t>(window.size()));
    for (const Segment& s : window.segments) {
      const std::vector<int64_t>& order = Epoch(s.epoch);
      out.insert(out.end(), order.begin() + s.begin, order.begin() + s.end);
    }
    return out;
  }

 private:
  const std::vector<int64_t>& Epoch(int64_t epoch) {
    auto it = epochs_.find(epoch);
    if (it == epochs_.end()) {
      // A window touches at most two epochs; older ones are done.
      while (!epochs_.empty() && epochs_.begin()->first < epoch - 1) epochs_.erase(epochs_.begin());
      it = epochs_.emplace(epoch, EpochPermutation(samples_, seed_, epoch)).first;
    }
    return it->second;
  }

  const int64_t samples_;
  const uint64_t seed_;
  std::map<int64_t, std::vector<int64_t>> epochs_;
};

// The process group of a data-parallel job (null for one rank), with every
// rank holding rank 0's parameters.
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

// The state to resume from: the newest readable checkpoint of this run in
// config.checkpoint_dir, restored into model and optimizer (step 0: a fresh
// start). Every rank must find the same one.
StatusOr<TrainingState> ResumeFrom(const TrainConfig& config, const RunIdentity& identity,
                                   Model& model, torch::optim::Optimizer& optimizer,
                                   GradientSync* sync, EventSink* sink,
                                   std::unique_ptr<CheckpointStore>* store) {
  TrainingState state;
  if (!config.checkpoint_dir.empty()) {
    *store = std::make_unique<CheckpointStore>(config.checkpoint_dir, config.checkpoint_keep);
    std::vector<std::string> passed_over;
    StatusOr<TrainingState> loaded = (*store)->LoadLatest(identity, model, optimizer, &passed_over);
    for (const std::string& why : passed_over) {
      sink->OnLog(LogLevel::kWarning, "checkpoint passed over: " + why);
    }
    if (loaded.ok()) {
      state = *loaded;
      sink->OnLog(LogLevel::kInfo, "resuming after step " + std::to_string(state.step) +
                                       " from a checkpoint in " + config.checkpoint_dir);
    } else if (loaded.status().code() != StatusCode::kNotFound) {
      return loaded.status();
    }
  }
  if (sync != nullptr) {
    const int64_t lowest = sync->MinAcrossRanks(state.step);
    const int64_t highest = -sync->MinAcrossRanks(-state.step);
    if (lowest != highest) {
      return Status::FailedPrecondition(
          "the ranks found different checkpoints (after steps " + std::to_string(lowest) + " to " +
          std::to_string(highest) + ") in checkpoint dir " + config.checkpoint_dir +
          ": every rank must see the same directory (shared storage when ranks span machines)");
    }
  }
  return state;
}

// The thread split of a rank that measures its own (see
// TrainConfig::measure_thread_split_cores): the checkpoint's when resuming on
// as many ranks with as many cores, else the fastest for this micro-batch.
// In a data-parallel job every rank joins one agreement, whether it measures
// or not (ranks on different workers may differ), and a measuring rank takes
// rank 0's split when it has the same candidates, so ranks on one split
// reduce alike.
void ChooseThreadSplit(const TrainConfig& config, const TrainingState& resumed, bool same_split,
                       int64_t micro, Model& model, WindowAccumulator& window, const Dataset& data,
                       const torch::Device& device, GradientSync* sync, EventSink* sink,
                       RunReport* run) {
  const bool measures = config.measure_thread_split_cores > 0 && device.is_cpu();
  const std::vector<ThreadSplit> candidates =
      measures ? CandidateThreadSplits(config.measure_thread_split_cores, BlasSharesIntraOpPool())
               : std::vector<ThreadSplit>();
  auto is_candidate = [&](const ThreadSplit& s) {
    return std::find(candidates.begin(), candidates.end(), s) != candidates.end();
  };
  ThreadSplit chosen;  // {0, 0}: this rank's counts were given
  if (measures && same_split && is_candidate(resumed.threads)) {
    chosen = resumed.threads;
  } else if (candidates.size() == 1) {  // one core: nothing to choose
    chosen = candidates[0];
  } else if (measures) {
    try {
      run->thread_trials = MeasureThreadSplitsOn(
          candidates, model, window,
          ToDevice(data.Gather(torch::arange(std::min(micro, data.size()))), device));
    } catch (const c10::OutOfMemoryError&) {
      // The first window meets the same limit and retries with a smaller
      // micro-batch.
      run->thread_trials.clear();
      sink->OnLog(LogLevel::kWarning, "thread split not measured: micro_batch " +
                                          std::to_string(micro) +
                                          " ran out of memory; its cores go to LibTorch's threads");
    }
    chosen = run->thread_trials.empty() ? candidates[0] : Fastest(run->thread_trials);
  }
  if (sync != nullptr) {
    constexpr int64_t kShift = int64_t{1} << 20;  // (intra-op, BLAS) as one number
    const int64_t mine = chosen.intra_op * kShift + chosen.blas;
    const int64_t first = sync->MinAcrossRanks(config.rank == 0 ? mine : INT64_MAX);
    const ThreadSplit agreed{static_cast<int>(first / kShift), static_cast<int>(first % kShift)};
    if (is_candidate(agreed)) chosen = agreed;
  }
  if (!measures) return;
  SetThreadCounts(chosen.intra_op, chosen.blas);
  if (candidates.size() > 1) run->threads = chosen;
}

// One StepReport from a finished window.
StepReport ReportOf(const Window& w, const WindowResult& result, double lr, double seconds,
                    const MemoryMeter& memory, int64_t steps_total, int64_t skipped_steps) {
  StepReport report;
  report.step = w.step;
  report.epoch = w.epoch;
  report.microbatches = result.microbatches;
  report.samples = result.samples;
  report.effective_batch = w.global_batch;
  report.loss_items = result.loss_items;
  report.loss = result.loss;
  report.lr = lr;
  report.grad_norm = result.grad_norm;
  report.clipped = result.clipped;
  report.step_seconds = seconds;
  report.samples_per_second = seconds > 0 ? static_cast<double>(result.samples) / seconds : 0;
  report.tensor_bytes = memory.current_bytes();
  report.tensor_peak_bytes = memory.peak_bytes();
  report.process_rss_bytes = ProcessRssBytes();
  report.allocator_reserved_bytes = memory.reserved_bytes();
  report.allocator_retries = memory.allocation_retries();
  report.steps_total = steps_total;
  report.allreduce_calls = result.sync.allreduce_calls;
  report.allreduce_bytes = result.sync.bytes;
  report.comm_seconds = result.sync.seconds;
  report.loss_scale = result.loss_scale;
  report.skipped = result.skipped;
  report.skipped_steps = skipped_steps;
  return report;
}

Status TrainOrThrow(const TrainConfig& config, EventSink* sink, const TrainOptions& options) {
  StatusOr<torch::Device> device = ParseDevice(config.device);
  if (!device.ok()) return device.status();
  StatusOr<std::unique_ptr<MemoryMeter>> memory = MakeMemoryMeter(*device);
  if (!memory.ok()) return memory.status();
  (*memory)->set_limit_bytes(config.memory_limit_bytes);
  // The allocator is process-wide: the budget ends with this run.
  struct LimitReset {
    MemoryMeter* meter;
    ~LimitReset() { meter->set_limit_bytes(0); }
  } limit_reset{memory->get()};

  StatusOr<std::unique_ptr<Dataset>> dataset = MakeDataset(config.data);
  if (!dataset.ok()) return dataset.status();
  const Dataset& data = **dataset;
  torch::manual_seed(config.seed);
  StatusOr<std::unique_ptr<Model>> built = BuildModel(config.model, data.shape());
  if (!built.ok()) return built.status();
  Model& model = **built;
  model.To(*device);
  std::vector<torch::Tensor> parameters = model.Parameters();

  StatusOr<std::unique_ptr<GradientSync>> connected = ConnectRanks(config, *device, parameters);
  if (!connected.ok()) return connected.status();
  std::unique_ptr<GradientSync> sync = std::move(*connected);
  StatusOr<std::unique_ptr<torch::optim::Optimizer>> optimizer =
      BuildOptimizer(config.optimizer, parameters);
  if (!optimizer.ok()) return optimizer.status();

  const LossKind loss = LossOf(config.model.loss, config.data.task);
  WindowAccumulator window(
      parameters, [&model](const torch::Tensor& x) { return model.Forward(x); }, loss,
      config.normalization, config.accumulation_steps, config.max_grad_norm, sync.get());
  if (Status s = CheckPrecision(config.precision, device->type()); !s.ok()) return s;
  window.set_precision(config.precision, device->type());
  std::unique_ptr<LossScaler> scaler;
  if (config.loss_scaling || config.precision == Precision::kFp16) {
    scaler = std::make_unique<LossScaler>(config.loss_scaler);
    window.set_loss_scaler(scaler.get());
  }

  const int64_t samples = data.size();
  const RunIdentity identity{
      config.seed,
      config.global_batch > 0 ? config.global_batch
                              : config.micro_batch * config.accumulation_steps * config.world_size,
      samples, model.CountParameters()};
  std::unique_ptr<CheckpointStore> checkpoints;
  StatusOr<TrainingState> resumed =
      ResumeFrom(config, identity, model, **optimizer, sync.get(), sink, &checkpoints);
  if (!resumed.ok()) return resumed.status();
  if (scaler && resumed->has_loss_scaler) scaler->Restore(resumed->loss_scaler);
  // Where this run left off on as many ranks, its split carries on (with any
  // out-of-memory reduction); on another device count the plan's split holds.
  const bool same_split = resumed->step > 0 && resumed->world_size == config.world_size;

  // The split: given, or (micro_batch: auto) measured against the budget.
  int64_t micro = same_split ? resumed->micro_batch : config.micro_batch;
  int64_t accumulation =
      same_split ? identity.global_batch / config.world_size / micro : config.accumulation_steps;
  std::vector<MicroBatchProbe> probe_table;
  if (config.auto_micro_batch && !same_split) {
    ProbeRequest probe;
    probe.model = &model;
    probe.loss = loss;
    probe.data = &data;
    probe.device = *device;
    probe.memory = memory->get();
    probe.per_rank_batch = config.global_batch / config.world_size;
    probe.optimizer_state_bytes = OptimizerStateBytes(config.optimizer, parameters);
    probe.budget_bytes = config.memory_limit_bytes;
    probe.margin = config.memory_margin;
    const ProbeResult probed = ProbeMicroBatch(probe);
    if (probed.micro_batch == 0) {
      return Status::ResourceExhausted(
          "micro_batch 1 does not fit the memory budget of " +
          std::to_string(config.memory_limit_bytes) +
          " bytes (one sample's forward + backward plus the optimizer state needs " +
          std::to_string(probed.table.back().peak_bytes) + ")");
    }
    micro = probed.micro_batch;
    // Every rank takes the smallest choice (all are divisors of one number).
    if (sync) micro = sync->MinAcrossRanks(micro);
    accumulation = probe.per_rank_batch / micro;
    probe_table = probed.table;
  }
  const WindowScheduleConfig schedule_config = ScheduleOf(config, samples, micro, accumulation);
  WindowSchedule schedule(schedule_config);
  const int64_t total = schedule.steps_total();
  // The learning rate the schedule starts from: scaled to the (full)
  // global batch under the linear rule.
  const int64_t full_accumulation =
      WindowSchedule::AccumulationAt(schedule_config, config.lr_schedule.warmup_steps);
  const int64_t full_global = micro * full_accumulation * config.world_size;
  const double base_lr = config.base_batch > 0
                             ? LinearlyScaledLr(config.optimizer.lr, full_global, config.base_batch)
                             : config.optimizer.lr;

  RunReport run;
  ChooseThreadSplit(config, *resumed, same_split, micro, model, window, data, *device, sync.get(),
                    sink, &run);
  run.micro_batch = micro;
  run.accumulation_steps = accumulation;
  run.resumed_from_step = resumed->step;
  run.probe = probe_table;
  run.device = config.device;
  run.parameters = model.CountParameters();
  run.samples_per_epoch = samples;
  run.steps_per_epoch = schedule.steps_in_first_epoch();
  run.steps_total = total;
  run.lr_first = LearningRate(config.lr_schedule, base_lr, 0, total);
  run.lr_last = LearningRate(config.lr_schedule, base_lr, std::max<int64_t>(0, total - 1), total);
  if (config.nominal_batch > 0) {
    for (int64_t t = 0; t < std::min(total, config.lr_schedule.warmup_steps + 1); ++t) {
      run.accumulation_ramp.push_back(WindowSchedule::AccumulationAt(schedule_config, t));
    }
  }
  sink->OnRun(run);
  if (model.HasBatchNorm() && micro < kSmallBatchNormBatch) {
    sink->OnLog(LogLevel::kWarning,
                "the model has BatchNorm and micro_batch is " + std::to_string(micro) +
                    ": its batch statistics come from one micro-batch, not from the window of " +
                    std::to_string(full_global) +
                    " samples, so accumulation does not reproduce the large batch exactly");
  }

  SampleStream stream(samples, config.seed);
  // Optimizer steps actually applied: the LR schedule advances with these,
  // not with windows skipped on a loss-scale overflow.
  int64_t applied = resumed->applied_steps;
  Window w;
  // The windows before the checkpoint: the schedule depends only on the
  // global batch and the seed, so they are the ones that were trained.
  for (int64_t s = 0; s < resumed->step && schedule.Next(&w); ++s) {
  }
  int64_t checkpointed = resumed->step;
  // Rank 0 writes the state after `step` (the others hold the same).
  auto checkpoint = [&](int64_t step) -> Status {
    if (!checkpoints || config.rank != 0 || step <= checkpointed) return Status::Ok();
    TrainingState state;
    state.identity = identity;
    state.step = step;
    state.applied_steps = applied;
    state.micro_batch = micro;
    state.world_size = config.world_size;
    state.threads = run.threads;
    state.has_loss_scaler = scaler != nullptr;
    if (scaler) state.loss_scaler = scaler->state();
    const auto start = Clock::now();
    StatusOr<std::string> path = checkpoints->Write(state, model, **optimizer);
    if (!path.ok()) {
      return Status(path.status().code(), "checkpoint after step " + std::to_string(step) + ": " +
                                              path.status().message());
    }
    checkpointed = step;
    sink->OnLog(LogLevel::kInfo,
                "checkpoint after step " + std::to_string(step) + ": " + *path + " (" +
                    std::to_string(static_cast<int64_t>(
                        std::chrono::duration<double, std::milli>(Clock::now() - start).count())) +
                    " ms)");
    return Status::Ok();
  };
  while (schedule.Next(&w)) {
    if (options.stop_requested && options.stop_requested->load()) {
      if (Status s = checkpoint(w.step - 1); !s.ok()) return s;
      return Status::Cancelled("stopped at a window boundary after step " +
                               std::to_string(w.step - 1));
    }
    const auto start = Clock::now();
    (*memory)->ResetPeak();
    const double lr = LearningRate(config.lr_schedule, base_lr, applied, total);
    const double weight_decay =
        config.nominal_batch > 0
            ? NominalWeightDecay(config.optimizer.weight_decay, config.nominal_batch, micro,
                                 config.world_size, w.accumulation)
            : config.optimizer.weight_decay;
    SetHyperparameters(**optimizer, lr, weight_decay);

    const std::vector<int64_t> indices = stream.Collect(w);
    const int64_t per_rank = w.global_batch / config.world_size;
    WindowResult result;
    while (true) {
      // The same samples whatever the split: only how they are cut changes.
      const int64_t k = per_rank / micro;
      window.set_nominal_microbatches(k);
      bool out_of_memory = false;
      try {
        for (const WindowRange& range : MicroBatchesOf({0, w.size()}, micro, k, config.rank)) {
          window.AddMicroBatch(ToDevice(data.Gather(IndexTensor(indices, range)), *device));
        }
      } catch (const c10::OutOfMemoryError&) {
        out_of_memory = true;
      }
      if (options.after_backward) options.after_backward(w.step, parameters);
      result = window.FinishWindow(out_of_memory);
      if (!result.out_of_memory) break;
      model.ZeroGrad();
      if (micro == 1) {
        return Status::ResourceExhausted("out of memory at micro_batch 1 in step " +
                                         std::to_string(w.step));
      }
      // A divisor of the current micro-batch divides every later window too.
      const int64_t smaller = LargestDivisorAtMost(micro, micro / 2);
      sink->OnLog(LogLevel::kWarning, "out of memory in step " + std::to_string(w.step) +
                                          " at micro_batch " + std::to_string(micro) +
                                          ": running the window again with micro_batch " +
                                          std::to_string(smaller) + " × accumulation " +
                                          std::to_string(per_rank / smaller));
      micro = smaller;
    }
    if (!result.skipped) {
      (*optimizer)->step();
      ++applied;
    }
    // Freed, not zeroed: between windows no gradient memory is held.
    model.ZeroGrad();

    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    sink->OnStep(
        ReportOf(w, result, lr, seconds, **memory, total, scaler ? scaler->skipped_windows() : 0));
    if (config.checkpoint_every_steps > 0 && w.step % config.checkpoint_every_steps == 0 &&
        w.step < total) {
      if (Status s = checkpoint(w.step); !s.ok()) return s;
    }
  }
  if (config.rank == 0 && !config.output_path.empty()) {
    if (Status saved = model.Save(config.output_path); !saved.ok()) {
      return saved;
    }
    sink->OnLog(LogLevel::kInfo, "final parameters written to " + config.output_path);
  }
  if (options.final_parameters != nullptr) {
    options.final_parameters->clear();
    for (const auto& p : parameters) {
      options.final_parameters->push_back(
          p.detach().to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true));
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
