// The textbook accumulation loop in plain LibTorch C++ — each micro-batch's
// mean loss divided by k, backward, an optimizer step every k micro-batches —
// on the same models, data and threads as the engine's window: the peer a
// C++ user would write, and the baseline of the engine's own overhead.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <string>

#include "bench/bench_models.h"

namespace accumulus::engine {
namespace {

void BM_Textbook(benchmark::State& state, const std::string& kind) {
  const int64_t micro = state.range(0);
  const int64_t accumulation = kGlobalBatch / micro;
  UseAccumulusThreadSplit(state, kind, micro);
  Workload w = MakeWorkload(ModelUnderTest(kind), micro);
  auto run_window = [&] {
    for (const Batch& b : w.micro_batches) {
      const torch::Tensor out = w.model->Forward(b.inputs);
      const torch::Tensor loss = torch::nn::functional::cross_entropy(
                                     out.reshape({-1, out.size(-1)}), b.targets.reshape({-1})) /
                                 static_cast<double>(accumulation);
      loss.backward();
    }
    w.optimizer->step();
    w.optimizer->zero_grad();
  };
  run_window();

  MeasureWindows(state, accumulation, run_window);
}

void Splits(benchmark::internal::Benchmark* b) {
  b->ArgNames({"micro"})->UseRealTime()->Unit(benchmark::kMillisecond);
  for (int64_t micro : {256, 64, 16, 4}) b->Args({micro});
}

BENCHMARK_CAPTURE(BM_Textbook, mlp, std::string("mlp"))->Apply(Splits);
BENCHMARK_CAPTURE(BM_Textbook, cnn, std::string("cnn"))->Apply(Splits);
BENCHMARK_CAPTURE(BM_Textbook, charlm, std::string("charlm"))->Apply(Splits);

// The machine's ceiling for the mlp: FLOP/s of a large matmul on the threads
// of the mlp at 256 × 1 (its layers are matmuls of this size class).
void BM_Matmul(benchmark::State& state) {
  UseAccumulusThreadSplit(state, "mlp", kGlobalBatch);
  const int64_t n = state.range(0);
  const torch::Tensor a = torch::randn({n, n});
  const torch::Tensor b = torch::randn({n, n});
  for (auto _ : state) benchmark::DoNotOptimize(torch::mm(a, b));
  state.counters["flops"] = benchmark::Counter(2.0 * static_cast<double>(n * n * n),
                                               benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Matmul)->Arg(1024)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace accumulus::engine
