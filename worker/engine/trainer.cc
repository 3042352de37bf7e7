#include "worker/engine/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "common/adaptive_batch.h"
#include "common/batch_arithmetic.h"
#include "common/noise_scale.h"
#include "common/window_schedule.h"
#include "worker/engine/checkpoint.h"
#include "worker/engine/dataset.h"
#include "worker/engine/durable_file.h"
#include "worker/engine/memory_meter.h"
#include "worker/engine/micro_batch_graph.h"
#include "worker/engine/micro_batch_probe.h"
#include "worker/engine/model_factory.h"
#include "worker/engine/model_output.h"
#include "worker/engine/phase_clock.h"
#include "worker/engine/process_group_sync.h"
#include "worker/engine/resume.h"
#include "worker/engine/run_setup.h"
#include "worker/engine/sample_order.h"
#include "worker/engine/step_report.h"
#include "worker/engine/thread_split_choice.h"
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

// One rank's run, in the order it happens: Prepare (the device, data, model,
// process group, optimizer and window), Resume (the checkpoint this attempt
// continues from), ResolveSplit (micro-batch and accumulation, the window
// schedule, the learning rate), Announce (the thread split and the plan
// reported), TrainWindows (each window, retried smaller on out of memory;
// checkpoints), Finish (the output, published by rename if the attempt is
// not superseded).
class TrainingRun {
 public:
  TrainingRun(const TrainConfig& config, EventSink* sink, const TrainOptions& options)
      : config_(config), sink_(sink), options_(options) {}

  // The memory budget is the process's allocator's: it ends with the run.
  ~TrainingRun() {
    if (memory_) memory_->set_limit_bytes(0);
  }

  Status Run() {
    if (Status s = CheckOutputWritable(); !s.ok()) return s;
    if (Status s = Prepare(); !s.ok()) return s;
    if (Status s = Resume(); !s.ok()) return s;
    if (Status s = ResolveSplit(); !s.ok()) return s;
    Announce();
    if (Status s = TrainWindows(); !s.ok()) return s;
    return Finish();
  }

 private:
  Status Prepare();
  Status Resume();
  Status ResolveSplit();
  // micro_batch: auto: the largest divisor that fits the budget, measured.
  Status ProbeMicroBatch();
  void Announce();
  Status TrainWindows();
  // One window: forward + backward of its micro-batches, the optimizer step.
  Status TrainWindow(const Window& w);
  // The noise scale takes the window's measurement in.
  NoiseReport MeasureNoise(const WindowResult& result);
  // Adaptive accumulation: the accumulation of the windows after step `step`.
  void AdaptBatch(int64_t step);
  // Adaptive accumulation: the global batch the rule has in force, and the
  // schedule's windows from the next one on made that large.
  int64_t adaptive_global_batch() const {
    return adaptive_->accumulation() * adaptive_->batch_per_accumulation();
  }
  void UseGlobalBatch(int64_t global) {
    schedule_->set_accumulation(global / (schedule_config_.micro_batch * config_.world_size));
  }
  // The learning rate the schedule starts from at global batch `global`.
  double BaseLrAt(int64_t global) const {
    return ScaledLr(config_.lr_scaling, config_.optimizer.lr, global, config_.base_batch);
  }
  // The window's micro-batches on the current split, run again smaller
  // while they run out of memory.
  StatusOr<WindowResult> AccumulateWindow(const Window& w);
  // Rank 0 writes the state after `step` (the other ranks hold the same).
  // One it cannot write for the storage's sake (a full disk, an I/O error,
  // a permission taken away) is reported, and the run goes on: a checkpoint
  // is the job's insurance, not its result, and a restart from the one
  // before reaches the same parameters. A superseded attempt still stops.
  Status Checkpoint(int64_t step);
  Status WriteCheckpoint(int64_t step);
  Status Finish();
  // Rank 0 writes the output when training ends: where it cannot (a
  // missing directory, no permission, a read-only mount) is found before the
  // first step, so no training is lost to a typo in the path.
  Status CheckOutputWritable() const;
  Status PublishOutput();
  std::string OutputTempPath() const {
    return config_.output_path + ".attempt-" + std::to_string(config_.attempt) + ".tmp";
  }

  const TrainConfig& config_;
  EventSink* const sink_;
  const TrainOptions& options_;

  // Prepare.
  torch::Device device_{torch::kCPU};
  // Everything the run queues on a GPU goes to one stream, made current
  // before the first tensor reaches the device and restored after the last
  // is freed (declared first, destroyed last).
  std::optional<TrainingStream> stream_guard_;
  std::unique_ptr<MemoryMeter> memory_;
  std::unique_ptr<Dataset> data_;
  std::unique_ptr<Model> model_;
  std::vector<torch::Tensor> parameters_;
  std::unique_ptr<GradientSync> sync_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  LossKind loss_ = LossKind::kCrossEntropy;
  std::unique_ptr<WindowAccumulator> window_;
  std::unique_ptr<PhaseClock> phases_;
  std::unique_ptr<LossScaler> scaler_;
  NoiseScaleEstimator noise_{config_.noise_scale_decay};
  // Resume.
  RunIdentity identity_;
  std::unique_ptr<CheckpointStore> checkpoints_;
  TrainingState resumed_;
  // Where this run left off on as many ranks, its split carries on (with any
  // out-of-memory reduction); on another device count the plan's holds.
  bool same_split_ = false;
  // ResolveSplit.
  int64_t micro_ = 0;
  int64_t accumulation_ = 0;
  std::vector<MicroBatchProbe> probe_table_;
  WindowScheduleConfig schedule_config_;
  std::optional<WindowSchedule> schedule_;
  int64_t total_ = 0;
  int64_t full_global_ = 0;  // the global batch once any accumulation ramp is over
  double base_lr_ = 0;
  // Adaptive accumulation (null: fixed).
  std::optional<AdaptiveBatchRule> adaptive_;
  // Announce.
  RunReport run_;
  // TrainWindows.
  std::optional<SampleStream> stream_;
  // Optimizer steps actually applied: the LR schedule
  // advances with these, not with windows skipped on a loss-scale overflow.
  int64_t applied_ = 0;
  int64_t checkpointed_ = 0;
  // Where the stream stood after the last window trained: what a
  // checkpoint records.
  SchedulePosition trained_position_;
};

Status TrainingRun::Prepare() {
  StatusOr<torch::Device> device = ParseDevice(config_.device);
  if (!device.ok()) return device.status();
  device_ = *device;
  stream_guard_.emplace(device_);
  StatusOr<std::unique_ptr<MemoryMeter>> memory = MakeMemoryMeter(device_);
  if (!memory.ok()) return memory.status();
  memory_ = std::move(*memory);
  memory_->set_limit_bytes(config_.memory_limit_bytes);

  StatusOr<std::unique_ptr<Dataset>> dataset = MakeDataset(config_.data);
  if (!dataset.ok()) return dataset.status().WithFault(Fault::kData);
  data_ = std::move(*dataset);
  torch::manual_seed(config_.seed);
  loss_ = LossOf(config_.model.loss, config_.data.task);
  StatusOr<std::unique_ptr<Model>> model = BuildModel(config_.model, data_->shape(), loss_);
  if (!model.ok()) return model.status().WithFault(Fault::kSpec);
  model_ = std::move(*model);
  model_->To(device_);
  parameters_ = model_->Parameters();

  StatusOr<std::unique_ptr<GradientSync>> sync = ConnectRanks(config_, device_, parameters_);
  if (!sync.ok()) return sync.status();
  sync_ = std::move(*sync);
  StatusOr<std::unique_ptr<torch::optim::Optimizer>> optimizer =
      BuildOptimizer(config_.optimizer, parameters_);
  if (!optimizer.ok()) return optimizer.status();
  optimizer_ = std::move(*optimizer);

  Model* model_ptr = model_.get();
  window_ = std::make_unique<WindowAccumulator>(
      parameters_, [model_ptr](const torch::Tensor& x) { return model_ptr->Forward(x); }, loss_,
      config_.normalization, config_.accumulation_steps, config_.max_grad_norm, sync_.get());
  if (Status s = CheckPrecision(config_.precision, device_.type()); !s.ok()) return s;
  window_->set_precision(config_.precision, device_.type());
  phases_ = MakePhaseClock(device_);
  window_->set_phase_clock(phases_.get());
  window_->set_measure_noise(true);
  if (config_.loss_scaling || config_.precision == Precision::kFp16) {
    scaler_ = std::make_unique<LossScaler>(config_.loss_scaler);
    window_->set_loss_scaler(scaler_.get());
  }
  // A TorchScript module may do what a capture forbids (read a value on
  // the host, branch on the data), and several ranks are not yet tested
  // with graphs: both run eagerly.
  window_->set_cuda_graphs(config_.cuda_graphs && device_.is_cuda() &&
                           config_.model.kind != ModelKind::kTorchScript &&
                           config_.world_size == 1);
  return Status::Ok();
}

Status TrainingRun::Resume() {
  identity_ = {config_.job_id, config_.seed,
               config_.global_batch > 0
                   ? config_.global_batch
                   : config_.micro_batch * config_.accumulation_steps * config_.world_size,
               data_->size(), model_->CountParameters()};
  StatusOr<TrainingState> resumed =
      ResumeFrom(config_, identity_, *model_, *optimizer_, sync_.get(), sink_, &checkpoints_);
  if (!resumed.ok()) return resumed.status();
  resumed_ = *resumed;
  if (scaler_ && resumed_.has_loss_scaler) scaler_->Restore(resumed_.loss_scaler);
  noise_.Restore(resumed_.noise);
  same_split_ = resumed_.step > 0 && resumed_.world_size == config_.world_size;
  applied_ = resumed_.applied_steps;
  checkpointed_ = resumed_.step;
  return Status::Ok();
}

Status TrainingRun::ResolveSplit() {
  micro_ = same_split_ ? resumed_.micro_batch : config_.micro_batch;
  accumulation_ = same_split_ ? identity_.global_batch / config_.world_size / micro_
                              : config_.accumulation_steps;
  if (config_.auto_micro_batch && !same_split_) {
    if (Status s = ProbeMicroBatch(); !s.ok()) return s;
  }
  schedule_config_ = ScheduleOf(config_, data_->size(), micro_, accumulation_);
  schedule_.emplace(schedule_config_);
  if (config_.adaptive.max_global_batch > 0) {
    // The rule counts in units of micro_batch × devices as they were when
    // it started; out-of-memory recovery later only cuts each window finer.
    AdaptiveBatchConfig adaptive = config_.adaptive;
    const bool restored = resumed_.has_adaptive && same_split_;
    adaptive.batch_per_accumulation =
        restored ? resumed_.adaptive_unit : schedule_config_.micro_batch * config_.world_size;
    adaptive_.emplace(adaptive, accumulation_ * schedule_config_.micro_batch * config_.world_size /
                                    adaptive.batch_per_accumulation);
    if (restored) {
      adaptive_->Restore(resumed_.adaptive);
    } else if (resumed_.has_adaptive) {
      // Another device count: the batch in force carries over as nearly as
      // the new unit divides it.
      AdaptiveBatchRule::State state = resumed_.adaptive;
      state.accumulation = std::clamp<int64_t>(
          resumed_.adaptive.accumulation * resumed_.adaptive_unit / adaptive.batch_per_accumulation,
          adaptive_->min_accumulation(), adaptive_->max_accumulation());
      adaptive_->Restore(state);
    }
    UseGlobalBatch(adaptive_global_batch());
    accumulation_ = schedule_->accumulation();
  }
  total_ = schedule_->steps_total();
  // The learning rate the schedule starts from: scaled to the (full)
  // global batch under the linear rule.
  full_global_ = micro_ * config_.world_size *
                 WindowSchedule::AccumulationAt(schedule_config_, config_.lr_schedule.warmup_steps);
  if (adaptive_) full_global_ = adaptive_global_batch();
  base_lr_ = BaseLrAt(full_global_);
  return Status::Ok();
}

Status TrainingRun::ProbeMicroBatch() {
  ProbeRequest probe;
  probe.model = model_.get();
  probe.loss = loss_;
  probe.data = data_.get();
  probe.device = device_;
  probe.memory = memory_.get();
  probe.per_rank_batch = config_.global_batch / config_.world_size;
  probe.optimizer_state_bytes = OptimizerStateBytes(config_.optimizer, parameters_);
  probe.budget_bytes = config_.memory_limit_bytes;
  probe.margin = config_.memory_margin;
  const ProbeResult probed = engine::ProbeMicroBatch(probe);
  if (probed.micro_batch == 0) {
    return Status::ResourceExhausted(
               "micro_batch 1 does not fit the memory budget of " +
               std::to_string(config_.memory_limit_bytes) +
               " bytes (one sample's forward + backward plus the optimizer state needs " +
               std::to_string(probed.table.back().peak_bytes) + ")")
        .WithFault(Fault::kMemory);
  }
  // Every rank takes the smallest choice (all are divisors of one number).
  micro_ = sync_ ? sync_->MinAcrossRanks(probed.micro_batch) : probed.micro_batch;
  accumulation_ = probe.per_rank_batch / micro_;
  probe_table_ = probed.table;
  return Status::Ok();
}

void TrainingRun::Announce() {
  ChooseThreadSplit(config_, resumed_, same_split_, micro_, *model_, *window_, *data_, device_,
                    sync_.get(), sink_, &run_);
  run_.micro_batch = micro_;
  run_.accumulation_steps = accumulation_;
  run_.resumed_from_step = resumed_.step;
  run_.probe = probe_table_;
  run_.device = config_.device;
  run_.parameters = model_->CountParameters();
  run_.samples_per_epoch = data_->size();
  run_.steps_per_epoch = schedule_->steps_in_first_epoch();
  run_.steps_total = total_;
  run_.lr_first = LearningRate(config_.lr_schedule, base_lr_, 0, total_);
  run_.lr_last =
      LearningRate(config_.lr_schedule, base_lr_, std::max<int64_t>(0, total_ - 1), total_);
  if (config_.nominal_batch > 0) {
    for (int64_t t = 0; t < std::min(total_, config_.lr_schedule.warmup_steps + 1); ++t) {
      run_.accumulation_ramp.push_back(WindowSchedule::AccumulationAt(schedule_config_, t));
    }
  }
  sink_->OnRun(run_);
  // Every rank reads the same file: one says how.
  if (config_.rank == 0 && !data_->reading().empty()) {
    sink_->OnLog(LogLevel::kInfo, data_->reading());
  }
  if (model_->HasBatchNorm() && micro_ < kSmallBatchNormBatch) {
    sink_->OnLog(LogLevel::kWarning,
                 "the model has BatchNorm and micro_batch is " + std::to_string(micro_) +
                     ": its batch statistics come from one micro-batch, not from the window of " +
                     std::to_string(full_global_) +
                     " samples, so accumulation does not reproduce the large batch exactly");
  }
}

Status TrainingRun::TrainWindows() {
  stream_.emplace(data_->size(), config_.seed);
  Window w;
  if (resumed_.has_adaptive) {
    // The windows depended on the decisions: continue where they left the
    // stream.
    schedule_->Seek(resumed_.position);
  } else {
    // The windows before the checkpoint: the schedule depends only on the
    // global batch and the seed, so they are the ones that were trained.
    for (int64_t s = 0; s < resumed_.step && schedule_->Next(&w); ++s) {
    }
  }
  trained_position_ = schedule_->position();
  if (config_.world_size == 1 && accumulation_ == 1 && !adaptive_) {
    sink_->OnLog(LogLevel::kInfo,
                 "the gradient noise scale is not measured: it needs two batch sizes, and one "
                 "micro-batch per window on one device gives one");
  }
  while (schedule_->Next(&w)) {
    if (options_.stop_requested && options_.stop_requested->load()) {
      if (Status s = Checkpoint(w.step - 1); !s.ok()) return s;
      return Status::Cancelled("stopped at a window boundary after step " +
                               std::to_string(w.step - 1));
    }
    if (Status s = TrainWindow(w); !s.ok()) return s;
    trained_position_ = schedule_->position();
    if (adaptive_) AdaptBatch(w.step);
    if (config_.checkpoint_every_steps > 0 && w.step % config_.checkpoint_every_steps == 0 &&
        w.step < total_) {
      if (Status s = Checkpoint(w.step); !s.ok()) return s;
    }
  }
  return Status::Ok();
}

// Without a loss scaler to skip it, a window whose loss or gradient is not
// finite would put NaN into every parameter, and every later step would
// train on them to the end: the run has diverged. It stops before the step,
// with the parameters of the last finite one (and its checkpoints), as the
// spec's fault: the same spec diverges again.
Status CheckFinite(int64_t step, const WindowResult& result, double lr) {
  if (result.skipped || (std::isfinite(result.loss) && std::isfinite(result.grad_norm))) {
    return Status::Ok();
  }
  return Status::InvalidArgument(
             "training diverged in step " + std::to_string(step) + ": its loss is " +
             c10::str(result.loss) + " and its gradient norm " + c10::str(result.grad_norm) +
             " at lr " + c10::str(lr) +
             "; the step was not applied (the parameters are those after step " +
             std::to_string(step - 1) +
             "). A smaller optimizer.lr, a warmup (lr_schedule.warmup_steps) or clipping "
             "(max_grad_norm) usually keep a run finite")
      .WithFault(Fault::kSpec);
}

Status TrainingRun::TrainWindow(const Window& w) {
  const auto start = Clock::now();
  memory_->ResetPeak();
  const int64_t start_bytes = memory_->current_bytes();
  phases_->TakeWindow();  // this window's phases only
  const double lr = LearningRate(config_.lr_schedule, base_lr_, applied_, total_);
  const double weight_decay =
      config_.nominal_batch > 0
          ? NominalWeightDecay(config_.optimizer.weight_decay, config_.nominal_batch, micro_,
                               config_.world_size, w.accumulation)
          : config_.optimizer.weight_decay;
  SetHyperparameters(*optimizer_, lr, weight_decay);
  StatusOr<WindowResult> result = AccumulateWindow(w);
  if (!result.ok()) return result.status();
  if (Status s = CheckFinite(w.step, *result, lr); !s.ok()) {
    window_->ClearGradients();
    return s;
  }
  {
    PhaseScope optimizer(phases_.get(), Phase::kOptimizer);
    if (!result->skipped) {
      optimizer_->step();
      ++applied_;
    }
    // Freed (or, under a CUDA graph, zeroed in place): the next window
    // starts from none.
    window_->ClearGradients();
  }
  if (const std::string note = window_->TakeGraphNote(); !note.empty()) {
    sink_->OnLog(LogLevel::kInfo, "step " + std::to_string(w.step) + ": " + note);
  }
  const PhaseTimes phases = phases_->TakeWindow();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  StepReport report =
      ReportOf(w, *result, lr, seconds, phases, *memory_, total_,
               scaler_ ? scaler_->skipped_windows() : 0, data_->shape().sequence_length > 0);
  // A graph's replays reuse memory the allocator counted only at capture.
  report.tensor_peak_bytes =
      std::max(report.tensor_peak_bytes, start_bytes + window_->graph_working_set_bytes());
  report.noise = MeasureNoise(*result);
  sink_->OnStep(report);
  return Status::Ok();
}

NoiseReport TrainingRun::MeasureNoise(const WindowResult& result) {
  NoiseReport report;
  report.measured = result.noise_measured && !result.skipped && noise_.Add(result.noise);
  if (report.measured) {
    report.sample = result.noise;
    report.window = EstimateNoise(result.noise);
  }
  report.windows = noise_.windows();
  report.noise_scale = noise_.noise_scale();
  report.gradient_sq_norm = noise_.gradient_sq_norm();
  report.noise_trace = noise_.noise_trace();
  return report;
}

void TrainingRun::AdaptBatch(int64_t step) {
  const int64_t before = adaptive_global_batch();
  const AdaptiveBatchRule::Decision decision = adaptive_->After(step, noise_.noise_scale());
  if (!decision.changed) return;
  const int64_t global = adaptive_global_batch();
  UseGlobalBatch(global);
  total_ = schedule_->steps_total();
  base_lr_ = BaseLrAt(global);
  // Every rank decides the same; rank 0 tells.
  if (config_.rank != 0) return;
  sink_->OnBatchChange({step + 1, schedule_->accumulation(), global, before, noise_.noise_scale(),
                        base_lr_, decision.reason});
}

StatusOr<WindowResult> TrainingRun::AccumulateWindow(const Window& w) {
  const std::vector<int64_t> indices = stream_->Collect(w);
  const int64_t per_rank = w.global_batch / config_.world_size;
  while (true) {
    // The same samples whatever the split: only how they are cut changes.
    const int64_t k = per_rank / micro_;
    window_->set_nominal_microbatches(k);
    bool out_of_memory = false;
    try {
      for (const WindowRange& range : MicroBatchesOf({0, w.size()}, micro_, k, config_.rank)) {
        window_->AddMicroBatch(ToDevice(data_->Gather(IndexTensor(indices, range)), device_));
      }
    } catch (const c10::OutOfMemoryError&) {
      out_of_memory = true;
    }
    if (options_.after_backward) options_.after_backward(w.step, parameters_);
    WindowResult result = window_->FinishWindow(out_of_memory);
    if (!result.out_of_memory) return result;
    memory_->ReleaseCachedBlocks();
    phases_->TakeWindow();  // the attempt that ran out counts nothing
    if (micro_ == 1) {
      return Status::ResourceExhausted("out of memory at micro_batch 1 in step " +
                                       std::to_string(w.step))
          .WithFault(Fault::kMemory);
    }
    // A divisor of the current micro-batch divides every later window too.
    const int64_t smaller = LargestDivisorAtMost(micro_, micro_ / 2);
    sink_->OnSplitChange({w.step, smaller, per_rank / smaller,
                          "out of memory in step " + std::to_string(w.step) + " at micro_batch " +
                              std::to_string(micro_)});
    micro_ = smaller;
  }
}

Status TrainingRun::Checkpoint(int64_t step) {
  if (!checkpoints_ || config_.rank != 0 || step <= checkpointed_) return Status::Ok();
  const Status written = WriteCheckpoint(step);
  if (written.ok()) return written;
  if (written.fault() != Fault::kStorage) {
    return written.WithContext("checkpoint after step " + std::to_string(step));
  }
  sink_->OnCheckpointFailed({step, written.message(), checkpointed_});
  return Status::Ok();
}

Status TrainingRun::WriteCheckpoint(int64_t step) {
  TrainingState state;
  state.identity = identity_;
  state.step = step;
  state.applied_steps = applied_;
  state.micro_batch = micro_;
  state.world_size = config_.world_size;
  state.threads = run_.threads;
  state.has_loss_scaler = scaler_ != nullptr;
  if (scaler_) state.loss_scaler = scaler_->state();
  state.noise = noise_.state();
  state.has_adaptive = adaptive_.has_value();
  if (adaptive_) {
    state.adaptive = adaptive_->state();
    state.adaptive_unit = adaptive_->batch_per_accumulation();
  }
  state.position = trained_position_;
  const auto start = Clock::now();
  StatusOr<std::string> path = checkpoints_->Write(state, *model_, *optimizer_);
  if (!path.ok()) return path.status();
  checkpointed_ = step;
  std::error_code size_error;
  const auto bytes = std::filesystem::file_size(*path, size_error);
  sink_->OnCheckpoint({step, *path, size_error ? 0 : static_cast<int64_t>(bytes),
                       std::chrono::duration<double>(Clock::now() - start).count()});
  return Status::Ok();
}

Status TrainingRun::Finish() {
  if (config_.rank == 0 && !config_.output_path.empty()) {
    if (Status s = PublishOutput(); !s.ok()) return s;
    sink_->OnLog(LogLevel::kInfo, "final parameters written to " + config_.output_path);
  }
  if (options_.final_parameters != nullptr) {
    options_.final_parameters->clear();
    for (const auto& p : parameters_) {
      options_.final_parameters->push_back(
          p.detach().to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true));
    }
  }
  return Status::Ok();
}

Status TrainingRun::CheckOutputWritable() const {
  if (config_.rank != 0 || config_.output_path.empty()) return Status::Ok();
  const std::string probe = OutputTempPath();
  if (Status s = WriteFileSynced(probe, ""); !s.ok()) return s.WithContext("output");
  std::remove(probe.c_str());
  return Status::Ok();
}

// Written to a file of this attempt's own, then renamed over the output
// only while no newer attempt has started: a superseded attempt (one still
// running on a worker the controller gave up on) never replaces the output
// its successor writes, and a reader never sees half a file.
Status TrainingRun::PublishOutput() {
  StatusOr<std::string> bytes = model_->Serialize();
  if (!bytes.ok()) return bytes.status();
  const std::string temp = OutputTempPath();
  if (Status s = WriteFileSynced(temp, *bytes); !s.ok()) return s;
  if (checkpoints_) {
    if (Status s = checkpoints_->CheckNotSuperseded("its output " + config_.output_path +
                                                    " is not replaced");
        !s.ok()) {
      std::remove(temp.c_str());
      return s;
    }
  }
  return RenameDurably(temp, config_.output_path);
}

}  // namespace

Status Train(const TrainConfig& config, EventSink* sink, const TrainOptions& options) {
  try {
    return TrainingRun(config, sink, options).Run();
  } catch (const c10::OutOfMemoryError& e) {
    // Outside a window, where no smaller micro-batch helps: the model, its
    // optimizer state or the data set does not fit.
    std::string budget;
    if (config.memory_limit_bytes > 0) {
      budget = "; the budget, " + std::to_string(config.memory_limit_bytes) +
               " bytes, is the spec's memory_limit_bytes, or else the device slot's memory";
    }
    return Status::ResourceExhausted(
               "out of memory outside a window's micro-batches (the model, its optimizer state or "
               "the data set does not fit" +
               budget + "): " + e.what_without_backtrace())
        .WithFault(Fault::kMemory);
  } catch (const ModelMismatch& e) {
    return Status::InvalidArgument(e.what()).WithFault(Fault::kSpec);
  } catch (const c10::DistError& e) {
    // A collective or the rendezvous store: a peer is gone or late.
    return Status::Unavailable(std::string("collective: ") + e.what_without_backtrace())
        .WithFault(Fault::kPeers);
  } catch (const c10::Error& e) {
    return Status::Internal(std::string("LibTorch: ") + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Status::Internal(e.what());
  }
}

}  // namespace accumulus::engine
