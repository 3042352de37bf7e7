#include "worker/engine/thread_split_choice.h"

#include <algorithm>
#include <climits>
#include <vector>

#include "worker/engine/thread_setup.h"
#include "worker/engine/thread_split.h"
#include "worker/engine/trial_scope.h"

namespace accumulus::engine {

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

}  // namespace accumulus::engine
