// What the benchmarks train: the models of the benchmark issue at one global
// batch of 256, shared by the engine's loop and the textbook loop, on the CPU
// and on a GPU. No Google Benchmark here: the GPU bench runs without it.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "worker/engine/dataset.h"
#include "worker/engine/model_factory.h"
#include "worker/engine/train_config.h"

namespace accumulus::engine {

constexpr int64_t kGlobalBatch = 256;

// mlp 784-1024-1024-10; cnn with two conv + BatchNorm blocks on 3×32×32;
// charlm with 2 layers, d_model 128, 4 heads, sequences of 128.
TrainConfig ModelUnderTest(const std::string& kind);

// What one benchmarked loop trains: the model (seed 0), SGD with momentum,
// and one global batch of its data cut into micro-batches up front, all on
// `device`. Built after the counting allocator is installed, so on the CPU
// all of it counts.
struct Workload {
  std::unique_ptr<Dataset> data;
  std::unique_ptr<Model> model;
  std::unique_ptr<torch::optim::SGD> optimizer;
  std::vector<Batch> micro_batches;
};
Workload MakeWorkload(const TrainConfig& config, int64_t micro,
                      const torch::Device& device = torch::kCPU);

}  // namespace accumulus::engine
