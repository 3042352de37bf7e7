#include "worker/engine/split_sweep.h"

#include <algorithm>

#include "worker/engine/trainer.h"

namespace accumulus::engine {
namespace {

class StepCollector final : public EventSink {
 public:
  void OnRun(const RunReport&) override {}
  void OnStep(const StepReport& r) override { steps.push_back(r); }
  void OnLog(LogLevel, const std::string&) override {}
  std::vector<StepReport> steps;
};

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
    c.epochs = 0;
    c.max_steps = windows + 1;
    StepCollector sink;
    if (Status s = Train(c, &sink); !s.ok()) return s;
    SplitMeasurement m;
    m.micro_batch = micro;
    m.accumulation_steps = c.accumulation_steps;
    double seconds = 0;
    int64_t samples = 0;
    for (size_t i = 1; i < sink.steps.size(); ++i) {
      seconds += sink.steps[i].step_seconds;
      samples += sink.steps[i].samples;
      m.peak_bytes = std::max(m.peak_bytes, sink.steps[i].tensor_peak_bytes);
    }
    m.samples_per_second = seconds > 0 ? static_cast<double>(samples) / seconds : 0;
    out.push_back(m);
  }
  return out;
}

}  // namespace accumulus::engine
