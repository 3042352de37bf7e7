// What measuring the gradient noise scale costs per window
// (WindowAccumulator::set_measure_noise, docs/accumulation.md "Gradient
// noise scale"): on one rank, one squared norm of the gradients right after
// the first micro-batch's backward (the window's own norm is taken for
// clipping anyway), two more scalars on the window's one host read, and the
// estimator's update. noise_report.py divides it by each split's window.
//
// And the same whole, in the window it measures: each model's window at
// every split the noise scale can be measured on (k > 1) with and without
// the measurement.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <string>

#include "bench/bench_models.h"
#include "common/noise_scale.h"
#include "worker/engine/loss.h"
#include "worker/engine/window_accumulator.h"

namespace accumulus::engine {
namespace {

WindowAccumulator MakeWindow(const TrainConfig& c, Workload& w, int64_t accumulation) {
  return WindowAccumulator(
      w.model->Parameters(), [&w](const torch::Tensor& in) { return w.model->Forward(in); },
      LossOf(c.model.loss, c.data.task), Normalization::kExact, accumulation, 0);
}

// The work the measurement adds to one window, on the gradients of a real
// window of the model (micro 16): the first micro-batch's squared norm, kept
// on the device, read with the window's counts, and the estimator's update.
void BM_NoiseMeasurementPerWindow(benchmark::State& state, const std::string& kind) {
  constexpr int64_t kMicro = 16;
  UseAccumulusThreadSplit(state, kind, kMicro);
  const TrainConfig c = ModelUnderTest(kind);
  Workload w = MakeWorkload(c, kMicro);
  WindowAccumulator window = MakeWindow(c, w, kGlobalBatch / kMicro);
  for (const Batch& b : w.micro_batches) window.AddMicroBatch(b);
  window.FinishWindow();
  const std::vector<torch::Tensor> parameters = w.model->Parameters();
  const torch::Tensor loss_sum = torch::zeros({}, torch::kFloat64);
  const torch::Tensor items = torch::full({}, 256.0, torch::kFloat64);
  NoiseScaleEstimator estimator;
  double window_sq_norm = 1.0;
  for (auto _ : state) {
    const torch::Tensor first = SquaredGradientNorm(parameters);
    // The window's read with the two extra values, against the read alone.
    const torch::Tensor host = torch::stack({loss_sum, items, first, items}).cpu();
    estimator.Add({host[3].item<double>() / kGlobalBatch * kMicro, host[2].item<double>(),
                   host[3].item<double>(), window_sq_norm});
    window_sq_norm *= 0.999;
  }
  benchmark::DoNotOptimize(estimator.noise_scale());
}
BENCHMARK_CAPTURE(BM_NoiseMeasurementPerWindow, mlp, std::string("mlp"))
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_NoiseMeasurementPerWindow, cnn, std::string("cnn"))
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_NoiseMeasurementPerWindow, charlm, std::string("charlm"))
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// noise 1: the window as a trainer runs it with the measurement on; 0: off.
void BM_WindowNoise(benchmark::State& state, const std::string& kind) {
  const int64_t micro = state.range(0);
  const bool noise = state.range(1) != 0;
  const int64_t accumulation = kGlobalBatch / micro;
  UseAccumulusThreadSplit(state, kind, micro);
  const TrainConfig c = ModelUnderTest(kind);
  Workload w = MakeWorkload(c, micro);
  WindowAccumulator window = MakeWindow(c, w, accumulation);
  window.set_measure_noise(noise);
  NoiseScaleEstimator estimator;
  auto run_window = [&] {
    for (const Batch& b : w.micro_batches) window.AddMicroBatch(b);
    const WindowResult result = window.FinishWindow();
    if (result.noise_measured) estimator.Add(result.noise);
    w.optimizer->step();
    w.model->ZeroGrad();
  };
  run_window();
  MeasureWindows(state, accumulation, run_window);
  state.counters["noise_scale"] = estimator.noise_scale();
}

void MeasurableSplits(benchmark::internal::Benchmark* b) {
  b->ArgNames({"micro", "noise"})->UseRealTime()->Unit(benchmark::kMillisecond);
  for (int64_t micro : {64, 16, 4}) {
    for (int noise : {0, 1}) b->Args({micro, noise});
  }
}
BENCHMARK_CAPTURE(BM_WindowNoise, mlp, std::string("mlp"))->Apply(MeasurableSplits);
BENCHMARK_CAPTURE(BM_WindowNoise, cnn, std::string("cnn"))->Apply(MeasurableSplits);
BENCHMARK_CAPTURE(BM_WindowNoise, charlm, std::string("charlm"))->Apply(MeasurableSplits);

}  // namespace
}  // namespace accumulus::engine
