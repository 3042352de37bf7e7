// Samples/s and peak tensor memory of one accumulation window of the engine,
// for one global batch of 256 split into different micro-batch sizes, on the
// three built-in models, with and without activation checkpointing: what a
// smaller micro-batch costs in speed and saves in memory.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <string>

#include "bench/bench_models.h"
#include "worker/engine/loss.h"
#include "worker/engine/window_accumulator.h"

namespace accumulus::engine {
namespace {

// One window of micro × (256 / micro), SGD with momentum, exact
// normalization: the engine's own window loop.
void BM_Window(benchmark::State& state, const std::string& kind) {
  const int64_t micro = state.range(0);
  const bool checkpoint = state.range(1) != 0;
  const int64_t accumulation = kGlobalBatch / micro;
  UseAccumulusThreadSplit(state, kind, micro);
  TrainConfig c = ModelUnderTest(kind);
  c.model.checkpoint_activations = checkpoint;
  Workload w = MakeWorkload(c, micro);
  WindowAccumulator window(
      w.model->Parameters(), [&](const torch::Tensor& in) { return w.model->Forward(in); },
      LossOf(c.model.loss, c.data.task), Normalization::kExact, accumulation, 0);

  auto run_window = [&] {
    for (const Batch& b : w.micro_batches) window.AddMicroBatch(b);
    window.FinishWindow();
    w.optimizer->step();
    w.model->ZeroGrad();
  };
  run_window();  // creates the optimizer state, which then persists

  MeasureWindows(state, accumulation, run_window);
}

void Splits(benchmark::internal::Benchmark* b, bool with_checkpointing) {
  b->ArgNames({"micro", "checkpoint"})->UseRealTime()->Unit(benchmark::kMillisecond);
  for (int checkpoint : {0, 1}) {
    if (checkpoint == 1 && !with_checkpointing) continue;
    for (int64_t micro : {256, 64, 16, 4}) b->Args({micro, checkpoint});
  }
}

// An mlp's checkpoint keeps what its blocks keep anyway (docs/accumulation.md):
// measured without it.
BENCHMARK_CAPTURE(BM_Window, mlp, std::string("mlp"))->Apply([](auto* b) { Splits(b, false); });
BENCHMARK_CAPTURE(BM_Window, cnn, std::string("cnn"))->Apply([](auto* b) { Splits(b, true); });
BENCHMARK_CAPTURE(BM_Window, charlm, std::string("charlm"))->Apply([](auto* b) {
  Splits(b, true);
});

}  // namespace
}  // namespace accumulus::engine
