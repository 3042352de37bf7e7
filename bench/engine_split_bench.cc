// Samples/s and peak tensor memory of one accumulation window of the engine,
// for the same global batch split into different micro-batch sizes: what a
// smaller micro-batch costs in speed, and what it saves in memory.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "worker/engine/mlp.h"
#include "worker/engine/thread_setup.h"
#include "worker/engine/tracking_allocator.h"
#include "worker/engine/window_accumulator.h"

namespace accumulus::engine {
namespace {

constexpr int64_t kGlobalBatch = 256;

// The mlp of the benchmark issue: 784-1024-1024-10 with SGD + momentum.
void BM_MlpWindow(benchmark::State& state) {
  const int64_t micro = state.range(0);
  const int64_t accumulation = kGlobalBatch / micro;
  TrackingCpuAllocator* memory = TrackingCpuAllocator::Install();
  torch::manual_seed(0);
  Mlp model(784, std::vector<int64_t>{1024, 1024}, 10);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  const torch::Tensor x = torch::randn({kGlobalBatch, 784});
  const torch::Tensor y = torch::randint(0, 10, {kGlobalBatch});
  WindowAccumulator window(
      model->parameters(), [&](const torch::Tensor& in) { return model(in); },
      LossKind::kCrossEntropy, Normalization::kExact, accumulation, 0);

  auto run_window = [&] {
    for (int64_t b = 0; b < kGlobalBatch; b += micro) {
      window.AddMicroBatch({x.slice(0, b, b + micro), y.slice(0, b, b + micro)});
    }
    window.FinishWindow();
    optimizer.step();
    model->zero_grad(/*set_to_none=*/true);
  };
  run_window();  // creates the optimizer state, which then persists

  // Peak above the steady state (parameters, optimizer state, data): the
  // window's gradients and one micro-batch's activations.
  int64_t peak = 0;
  for (auto _ : state) {
    memory->ResetPeak();
    const int64_t before = memory->current_bytes();
    run_window();
    peak = std::max(peak, memory->peak_bytes() - before);
  }
  state.SetItemsProcessed(state.iterations() * kGlobalBatch);
  state.counters["accumulation"] = static_cast<double>(accumulation);
  state.counters["window_peak_bytes"] = static_cast<double>(peak);
}
BENCHMARK(BM_MlpWindow)->ArgName("micro")->Arg(256)->Arg(64)->Arg(16)->Arg(4)->UseRealTime();

}  // namespace
}  // namespace accumulus::engine

int main(int argc, char** argv) {
  // The trainer's own configuration: LibTorch threads on the cores, one BLAS
  // thread (PLATFORM.md: oversubscription halves throughput).
  const auto threads = accumulus::engine::ConfigureThreads(0, 1);
  benchmark::AddCustomContext("intra_op_threads", std::to_string(threads.intra_op_threads));
  benchmark::AddCustomContext("blas_threads", std::to_string(threads.blas_threads));
  benchmark::AddCustomContext("blas", threads.blas);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
