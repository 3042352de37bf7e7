// What the benchmarks train: the models of the benchmark issue at one global
// batch of 256, shared by the engine's loop and the textbook loop.
#pragma once

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "worker/engine/dataset.h"
#include "worker/engine/model_factory.h"
#include "worker/engine/thread_split.h"
#include "worker/engine/train_config.h"

namespace accumulus::engine {

constexpr int64_t kGlobalBatch = 256;

// mlp 784-1024-1024-10; cnn with two conv + BatchNorm blocks on 3×32×32;
// charlm with 2 layers, d_model 128, 4 heads, sequences of 128.
TrainConfig ModelUnderTest(const std::string& kind);

// What one benchmarked loop trains: the model (seed 0), SGD with momentum,
// and one global batch of its data cut into micro-batches up front. Built
// after the counting allocator is installed, so all of it counts.
struct Workload {
  std::unique_ptr<Dataset> data;
  std::unique_ptr<Model> model;
  std::unique_ptr<torch::optim::SGD> optimizer;
  std::vector<Batch> micro_batches;
};
Workload MakeWorkload(const TrainConfig& config, int64_t micro);

// The thread split a trainer rank owning every core of this machine measures
// for this model and micro-batch (worker/engine/thread_split.h), on the
// engine's own forward + backward; measured once and shared, so the engine
// and its peers run on the same threads. ACCUMULUS_BENCH_THREADS=INTRA,BLAS
// gives it instead (compare.py: a run paired with a Python run on the split
// an earlier run measured). Applies it and records it in `state`'s counters
// (intra_op_threads, blas_threads).
ThreadSplit UseAccumulusThreadSplit(benchmark::State& state, const std::string& kind,
                                    int64_t micro);

// Times `run_window` (one window of global batch kGlobalBatch, warmed up
// already) and records samples/s, the accumulation and the window's peak of
// all live tensors: parameters, gradients, optimizer state, the data set and
// one micro-batch's activations (loops differ in what they hold between
// windows, so the peak is compared whole).
void MeasureWindows(benchmark::State& state, int64_t accumulation,
                    const std::function<void()>& run_window);

}  // namespace accumulus::engine
