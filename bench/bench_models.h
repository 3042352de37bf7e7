// What the CPU benchmarks share beyond the workload (bench_workload.h): the
// thread split the engine's loop and the textbook loop both run on, and the
// measurement of one window.
#pragma once

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_workload.h"
#include "worker/engine/thread_split.h"

namespace accumulus::engine {

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
