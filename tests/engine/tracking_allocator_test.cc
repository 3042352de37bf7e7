#include "worker/engine/tracking_allocator.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace accumulus::engine {
namespace {

TEST(TrackingCpuAllocator, CountsATensorWhileItLives) {
  TrackingCpuAllocator* memory = TrackingCpuAllocator::Install();
  const int64_t baseline = memory->current_bytes();
  memory->ResetPeak();
  {
    const torch::Tensor t = torch::empty({1024, 256}, torch::kFloat32);  // 1 MiB
    EXPECT_GE(memory->current_bytes(), baseline + 1024 * 256 * 4);
  }
  EXPECT_EQ(memory->current_bytes(), baseline);
  EXPECT_GE(memory->peak_bytes(), baseline + 1024 * 256 * 4);
  memory->ResetPeak();
  EXPECT_EQ(memory->peak_bytes(), memory->current_bytes());
}

TEST(TrackingCpuAllocator, ReturnsToBaselineAfterAWindow) {
  TrackingCpuAllocator* memory = TrackingCpuAllocator::Install();
  torch::manual_seed(0);
  torch::nn::Linear layer(64, 64);
  torch::Tensor x = torch::randn({128, 64});
  layer(x).sum().backward();  // allocates the gradients once
  layer->zero_grad(/*set_to_none=*/true);
  const int64_t baseline = memory->current_bytes();
  for (int micro = 0; micro < 4; ++micro) layer(x).pow(2).sum().backward();
  EXPECT_GT(memory->current_bytes(), baseline);  // the accumulated gradients
  layer->zero_grad(/*set_to_none=*/true);
  EXPECT_EQ(memory->current_bytes(), baseline);
}

TEST(TrackingCpuAllocator, CountsAllocationsFromTheIntraOpPool) {
  TrackingCpuAllocator* memory = TrackingCpuAllocator::Install();
  const int64_t baseline = memory->current_bytes();
  at::parallel_for(0, 64, 1, [](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      std::vector<torch::Tensor> held;
      for (int j = 0; j < 50; ++j) held.push_back(torch::empty({1000 + j}));
    }
  });
  EXPECT_EQ(memory->current_bytes(), baseline);
}

}  // namespace
}  // namespace accumulus::engine
