// What the benchmarks train: the models of the benchmark issue at one global
// batch of 256, shared by the engine's loop and the textbook loop.
#pragma once

#include <string>

#include "worker/engine/train_config.h"

namespace accumulus::engine {

constexpr int64_t kGlobalBatch = 256;

// mlp 784-1024-1024-10; cnn with two conv + BatchNorm blocks on 3×32×32;
// charlm with 2 layers, d_model 128, 4 heads, sequences of 128.
TrainConfig ModelUnderTest(const std::string& kind);

}  // namespace accumulus::engine
