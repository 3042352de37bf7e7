// The engine's accumulation window on a GPU: samples/s and the window's peak
// of allocated CUDA memory for mlp, cnn and charlm at global batch 256 split
// 256×1, 64×4, 16×16 and 4×64, in fp32 and under bf16 autocast. The data
// lives on the GPU, as in the Python peer (bench/peers/textbook_loop.py
// --device cuda), so both time the same work: forward, backward, the
// window's normalization and the optimizer step, to the end of the GPU's
// work. The engine's windows measure the gradient noise scale, as a
// trainer's do, and run as a job runs: micro-batches as CUDA graph replays
// once warmed up ("engine"); "engine-eager" is the same loop with graphs
// off. Standalone (no Google Benchmark) so that it also builds on a
// GPU machine that has nothing but LibTorch.
//
//   accumulus_gpu_bench [WINDOWS]   one JSON line per configuration on stdout
//   accumulus_gpu_bench --noise-cost [WINDOWS]
//       what measuring the noise scale costs: each split the noise scale is
//       measured at (more than one micro-batch) run with and without it, in
//       turn, 5 times each; the median of each, one JSON line per split
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_workload.h"
#include "worker/engine/autocast_scope.h"
#include "worker/engine/device_probe.h"
#include "worker/engine/loss.h"
#include "worker/engine/micro_batch_graph.h"
#include "worker/engine/window_accumulator.h"

namespace accumulus::engine {
namespace {

using Clock = std::chrono::steady_clock;

struct Measurement {
  double samples_per_second = 0;
  int64_t window_peak_bytes = 0;
};

Measurement MeasureSplit(const std::string& kind, int64_t micro, Precision precision, bool noise,
                         bool graphs, int windows) {
  const torch::Device gpu(torch::kCUDA, 0);
  TrainingStream stream(gpu);  // as a trainer runs: graphs need a stream of their own
  const TrainConfig c = ModelUnderTest(kind);
  Workload w = MakeWorkload(c, micro, gpu);
  WindowAccumulator window(
      w.model->Parameters(), [&](const torch::Tensor& in) { return w.model->Forward(in); },
      LossOf(c.model.loss, c.data.task), Normalization::kExact, kGlobalBatch / micro, 0);
  window.set_precision(precision, torch::kCUDA);
  window.set_measure_noise(noise);
  window.set_cuda_graphs(graphs);
  auto run_window = [&] {
    for (const Batch& b : w.micro_batches) window.AddMicroBatch(b);
    window.FinishWindow();
    w.optimizer->step();
    window.ClearGradients();
  };
  // Optimizer state, cuDNN, the allocator and (with graphs, by the third
  // window at the latest) the capture.
  for (int i = 0; i < 3; ++i) run_window();
  torch::cuda::synchronize();

  Measurement m;
  const auto aggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  const auto start = Clock::now();
  for (int i = 0; i < windows; ++i) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(0);
    const int64_t start_bytes =
        c10::cuda::CUDACachingAllocator::getDeviceStats(0).allocated_bytes[aggregate].current;
    run_window();
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
    // A replay's memory was counted by the allocator at capture only.
    m.window_peak_bytes = std::max({m.window_peak_bytes, stats.allocated_bytes[aggregate].peak,
                                    start_bytes + window.graph_working_set_bytes()});
  }
  torch::cuda::synchronize();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  m.samples_per_second = windows * kGlobalBatch / seconds;
  return m;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// With and without the measurement in turn, so that the GPU's clocks and
// whatever else drifts fall on both alike.
void NoiseCost(int windows) {
  constexpr int kRepetitions = 5;
  for (const std::string kind : {"mlp", "cnn", "charlm"}) {
    for (const Precision precision : {Precision::kFp32, Precision::kBf16}) {
      for (const int64_t micro : {64, 16, 4}) {
        std::vector<double> on, off;
        for (int r = 0; r < kRepetitions; ++r) {
          on.push_back(
              MeasureSplit(kind, micro, precision, true, true, windows).samples_per_second);
          off.push_back(
              MeasureSplit(kind, micro, precision, false, true, windows).samples_per_second);
        }
        const double with = Median(on), without = Median(off);
        std::printf(
            "{\"model\": \"%s\", \"micro\": %lld, \"precision\": \"%s\", "
            "\"samples_per_second_with\": %.3f, \"samples_per_second_without\": %.3f, "
            "\"cost\": %.5f}\n",
            kind.c_str(), static_cast<long long>(micro),
            precision == Precision::kBf16 ? "bf16" : "fp32", with, without, without / with - 1);
        std::fflush(stdout);
      }
    }
  }
}

int Run(int windows, bool noise_cost) {
  const std::vector<CudaDevice> gpus = ProbeCudaDevices();
  if (gpus.empty()) {
    std::fprintf(stderr, "accumulus_gpu_bench: no CUDA device visible\n");
    return 1;
  }
  if (noise_cost) {
    NoiseCost(windows);
    return 0;
  }
  for (const std::string kind : {"mlp", "cnn", "charlm"}) {
    for (const Precision precision : {Precision::kFp32, Precision::kBf16}) {
      for (const int64_t micro : {256, 64, 16, 4}) {
        for (const bool graphs : {true, false}) {
          const Measurement m =
              MeasureSplit(kind, micro, precision, /*noise=*/true, graphs, windows);
          std::printf(
              "{\"peer\": \"%s\", \"model\": \"%s\", \"micro\": %lld, "
              "\"accumulation\": %lld, \"precision\": \"%s\", \"gpu\": \"%s\", "
              "\"torch\": \"%s\", \"samples_per_second\": %.3f, \"window_peak_bytes\": %lld}\n",
              graphs ? "engine" : "engine-eager", kind.c_str(), static_cast<long long>(micro),
              static_cast<long long>(kGlobalBatch / micro),
              precision == Precision::kBf16 ? "bf16" : "fp32", gpus[0].name.c_str(), TORCH_VERSION,
              m.samples_per_second, static_cast<long long>(m.window_peak_bytes));
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace accumulus::engine

int main(int argc, char** argv) {
  const bool noise_cost = argc > 1 && std::strcmp(argv[1], "--noise-cost") == 0;
  const int first = noise_cost ? 2 : 1;
  const int windows = argc > first ? std::atoi(argv[first]) : 20;
  if (windows < 1 || argc > first + 1) {
    std::fprintf(stderr, "usage: accumulus_gpu_bench [--noise-cost] [WINDOWS >= 1]\n");
    return 2;
  }
  return accumulus::engine::Run(windows, noise_cost);
}
