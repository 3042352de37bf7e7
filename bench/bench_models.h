// What the benchmarks train: the models of the benchmark issue at one global
// batch of 256, shared by the engine's loop and the textbook loop.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <string>

#include "worker/engine/train_config.h"

namespace accumulus::engine {

constexpr int64_t kGlobalBatch = 256;

// mlp 784-1024-1024-10; cnn with two conv + BatchNorm blocks on 3×32×32;
// charlm with 2 layers, d_model 128, 4 heads, sequences of 128.
TrainConfig ModelUnderTest(const std::string& kind);

// Times `run_window` (one window of global batch kGlobalBatch, warmed up
// already) and records samples/s, the accumulation and the window's peak of
// all live tensors: parameters, gradients, optimizer state, the data set and
// one micro-batch's activations (loops differ in what they hold between
// windows, so the peak is compared whole).
void MeasureWindows(benchmark::State& state, int64_t accumulation,
                    const std::function<void()>& run_window);

}  // namespace accumulus::engine
