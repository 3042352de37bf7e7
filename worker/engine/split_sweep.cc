#include "worker/engine/split_sweep.h"

#include <algorithm>

#include "worker/engine/trainer.h"

namespace accumulus::engine {
namespace {

class StepCollector final : public EventSink {
 public:
  void OnRun(const RunReport& r) override { threads = r.threads; }
  void OnStep(const StepReport& r) override { steps.push_back(r); }
  // A sweep runs without a memory budget: nothing to recover from.
  void OnSplitChange(const SplitChange&) override {}
  void OnLog(LogLevel, const std::string&) override {}
  std::vector<StepReport> steps;
  ThreadSplit threads;
};

struct Cost {
  double samples_per_second = 0;
  int64_t peak_bytes = 0;
  ThreadSplit threads;
};

// Trains `windows` + 1 windows and measures all but the first.
StatusOr<Cost> Measure(const TrainConfig& c, int64_t windows) {
  TrainConfig run = c;
  run.epochs = 0;
  run.max_steps = windows + 1;
  StepCollector sink;
  if (Status s = Train(run, &sink); !s.ok()) return s;
  Cost cost;
  cost.threads = sink.threads;
  double seconds = 0;
  int64_t samples = 0;
  for (size_t i = 1; i < sink.steps.size(); ++i) {
    seconds += sink.steps[i].step_seconds;
    samples += sink.steps[i].samples;
    cost.peak_bytes = std::max(cost.peak_bytes, sink.steps[i].tensor_peak_bytes);
  }
  cost.samples_per_second = seconds > 0 ? static_cast<double>(samples) / seconds : 0;
  return cost;
}

}  // namespace

std::vector<int64_t> DefaultSweep(int64_t per_rank_batch) {
  std::vector<int64_t> out;
  for (int64_t factor : {1, 4, 16, 64}) {
    if (per_rank_batch % factor == 0) out.push_back(per_rank_batch / factor);
  }
  return out;
}

StatusOr<std::vector<SplitMeasurement>> SweepSplits(const TrainConfig& config,
                                                    const std::vector<int64_t>& micro_batches,
                                                    int64_t windows) {
  const int64_t per_rank = config.micro_batch * config.accumulation_steps;
  std::vector<SplitMeasurement> out;
  for (int64_t micro : micro_batches) {
    if (micro <= 0 || per_rank % micro != 0) {
      return Status::InvalidArgument("micro_batch " + std::to_string(micro) +
                                     " does not divide the per-rank batch " +
                                     std::to_string(per_rank));
    }
    TrainConfig c = config;
    c.micro_batch = micro;
    c.accumulation_steps = per_rank / micro;
    c.world_size = 1;
    c.rank = 0;
    c.auto_micro_batch = false;
    c.nominal_batch = 0;
    c.output_path.clear();
    SplitMeasurement m;
    m.micro_batch = micro;
    m.accumulation_steps = c.accumulation_steps;
    c.model.checkpoint_activations = false;
    StatusOr<Cost> plain = Measure(c, windows);
    if (!plain.ok()) return plain.status();
    m.samples_per_second = plain->samples_per_second;
    m.peak_bytes = plain->peak_bytes;
    m.threads = plain->threads;
    if (c.model.kind != ModelKind::kTorchScript) {
      c.model.checkpoint_activations = true;
      StatusOr<Cost> checkpointed = Measure(c, windows);
      if (!checkpointed.ok()) return checkpointed.status();
      m.checkpointed_samples_per_second = checkpointed->samples_per_second;
      m.checkpointed_peak_bytes = checkpointed->peak_bytes;
    }
    out.push_back(m);
  }
  return out;
}

}  // namespace accumulus::engine
