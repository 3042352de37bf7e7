#include "bench/bench_models.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>
#include <utility>

#include "worker/engine/loss.h"
#include "worker/engine/thread_setup.h"
#include "worker/engine/tracking_allocator.h"
#include "worker/engine/trial_scope.h"
#include "worker/engine/window_accumulator.h"

namespace accumulus::engine {

ThreadSplit UseAccumulusThreadSplit(benchmark::State& state, const std::string& kind,
                                    int64_t micro) {
  static std::map<std::pair<std::string, int64_t>, ThreadSplit> measured;
  auto found = measured.find({kind, micro});
  const char* given = std::getenv("ACCUMULUS_BENCH_THREADS");
  if (found == measured.end() && given != nullptr) {
    int intra_op = 0, blas = 0;
    if (std::sscanf(given, "%d,%d", &intra_op, &blas) != 2 || intra_op < 1 || blas < 1) {
      std::fprintf(stderr, "ACCUMULUS_BENCH_THREADS=%s: expected INTRA,BLAS (two counts >= 1)\n",
                   given);
      std::exit(2);
    }
    found = measured.emplace(std::make_pair(kind, micro), ThreadSplit{intra_op, blas}).first;
  }
  if (found == measured.end()) {
    const TrainConfig c = ModelUnderTest(kind);
    Workload w = MakeWorkload(c, micro);
    WindowAccumulator window(
        w.model->Parameters(), [&](const torch::Tensor& in) { return w.model->Forward(in); },
        LossOf(c.model.loss, c.data.task), Normalization::kExact, kGlobalBatch / micro, 0);
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const std::vector<ThreadTrial> trials = MeasureThreadSplitsOn(
        CandidateThreadSplits(cores, BlasSharesIntraOpPool()), *w.model, window, w.micro_batches.front());
    found = measured.emplace(std::make_pair(kind, micro), Fastest(trials)).first;
  }
  const ThreadSplit split = found->second;
  SetThreadCounts(split.intra_op, split.blas);
  state.counters["intra_op_threads"] = split.intra_op;
  state.counters["blas_threads"] = split.blas;
  return split;
}

void MeasureWindows(benchmark::State& state, int64_t accumulation,
                    const std::function<void()>& run_window) {
  TrackingCpuAllocator* memory = TrackingCpuAllocator::Install();
  int64_t peak = 0;
  for (auto _ : state) {
    memory->ResetPeak();
    run_window();
    peak = std::max(peak, memory->peak_bytes());
  }
  state.SetItemsProcessed(state.iterations() * kGlobalBatch);
  state.counters["accumulation"] = static_cast<double>(accumulation);
  state.counters["window_peak_bytes"] = static_cast<double>(peak);
}

}  // namespace accumulus::engine
