// Micro-batches replayed as CUDA graphs (worker/engine/micro_batch_graph.h)
// on a real GPU: the replays compute what the eager micro-batches compute,
// read the values that change between them (the loss scale), never make the
// host wait inside a window, and a job says when they started. Every test
// skips where LibTorch sees no CUDA device.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>

#include "tests/gpu/gpu_test_support.h"
#include "tests/support/engine_test_support.h"
#include "worker/engine/dataset.h"
#include "worker/engine/micro_batch_graph.h"
#include "worker/engine/mlp.h"
#include "worker/engine/window_accumulator.h"

#define REQUIRE_CUDA_DEVICE()                                                         \
  do {                                                                                \
    if (torch::cuda::device_count() < 1) GTEST_SKIP() << "needs a CUDA device, none"; \
  } while (0)

namespace accumulus::engine {
namespace {

using testing::MaxRelativeDifference;
using testing::RecordingSink;
using testing::TrainAndCollect;
namespace F = torch::nn::functional;

const torch::Device kGpu(torch::kCUDA, 0);

std::vector<torch::Tensor> GradientsOf(torch::nn::Module& module) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : module.parameters()) grads.push_back(p.grad().detach().cpu().clone());
  return grads;
}

// Three full micro-batches of 32 and a short one of 20: the full ones replay
// the graph, the short one runs eagerly, and the window's gradient is the
// one big batch's. The host never waits inside a window of replays.
TEST(CudaGraphs, AWindowOfReplaysGivesTheBigBatchsGradientWithoutAHostWait) {
  REQUIRE_CUDA_DEVICE();
  TrainingStream stream(kGpu);
  torch::manual_seed(7);
  Mlp model(20, std::vector<int64_t>{64, 64}, 5);
  model->to(kGpu);
  const torch::Tensor x = torch::randn({116, 20});
  const torch::Tensor y = torch::randint(0, 5, {116});
  WindowAccumulator window(
      model->parameters(), [&](const torch::Tensor& in) { return model(in); },
      LossKind::kCrossEntropy, Normalization::kExact, /*nominal_microbatches=*/4,
      /*max_grad_norm=*/0);
  window.set_cuda_graphs(true);
  window.set_measure_noise(true);
  auto add_window = [&] {
    for (int64_t b = 0; b < 116; b += 32) {
      const int64_t e = std::min<int64_t>(116, b + 32);
      window.AddMicroBatch(ToDevice({x.slice(0, b, e), y.slice(0, b, e)}, kGpu));
    }
  };
  // Eager: the warm-up. Then the capture at the next window's start.
  add_window();
  EXPECT_EQ(window.FinishWindow().graph_replays, 0);
  window.ClearGradients();
  add_window();
  EXPECT_EQ(window.FinishWindow().graph_replays, 3);
  EXPECT_NE(window.TakeGraphNote().find("now run as CUDA graph replays"), std::string::npos);
  EXPECT_GT(window.graph_working_set_bytes(), 0);
  window.ClearGradients();

  EXPECT_EQ(testing::SyncErrorIn(add_window), "")
      << "a synchronizing call inside a window of replays";
  const WindowResult result = window.FinishWindow();
  EXPECT_EQ(result.graph_replays, 3);
  EXPECT_EQ(result.loss_items, 116);
  EXPECT_TRUE(result.noise_measured);
  EXPECT_EQ(result.noise.small_batch, 32);

  // The same parameters, one eager batch of all 116.
  const std::vector<torch::Tensor> accumulated = GradientsOf(*model);
  model->zero_grad(/*set_to_none=*/true);
  F::cross_entropy(model(x.to(kGpu)), y.to(kGpu)).backward();
  EXPECT_LE(MaxRelativeDifference(accumulated, GradientsOf(*model)), 1e-6);
  EXPECT_NEAR(result.loss, F::cross_entropy(model(x.to(kGpu)), y.to(kGpu)).item<double>(), 1e-6);
}

// The GPU tests' small MLP job for two epochs (8 steps), with or without
// graphs.
TrainConfig SmallMlp(bool cuda_graphs) {
  TrainConfig c = testing::SmallMlp("cuda:0");
  c.epochs = 2;
  c.cuda_graphs = cuda_graphs;
  return c;
}

bool SaysGraphsStarted(const RecordingSink& sink, const std::string& at_step) {
  for (const std::string& line : sink.logs) {
    if (line.rfind(at_step + ": micro-batches of shape", 0) == 0 &&
        line.find("now run as CUDA graph replays") != std::string::npos) {
      return true;
    }
  }
  return false;
}

// A whole job with and without graphs: the same trajectory. The first
// window warms up (four eager micro-batches), the second captures.
TEST(CudaGraphs, AJobWithReplaysEndsWhereTheEagerJobEnds) {
  REQUIRE_CUDA_DEVICE();
  RecordingSink eager_sink, graph_sink;
  const auto eager = TrainAndCollect(SmallMlp(false), &eager_sink);
  const auto graphed = TrainAndCollect(SmallMlp(true), &graph_sink);
  EXPECT_TRUE(SaysGraphsStarted(graph_sink, "step 2")) << ::testing::PrintToString(graph_sink.logs);
  EXPECT_FALSE(SaysGraphsStarted(eager_sink, "step 2"));
  ASSERT_EQ(graph_sink.steps.size(), eager_sink.steps.size());
  const double difference = MaxRelativeDifference(graphed, eager);
  std::printf("mlp fp32: graphs vs eager, max relative difference %.3g\n", difference);
  EXPECT_LE(difference, 1e-6);
  for (size_t i = 0; i < graph_sink.steps.size(); ++i) {
    EXPECT_NEAR(graph_sink.steps[i].loss, eager_sink.steps[i].loss,
                1e-6 * std::abs(eager_sink.steps[i].loss))
        << "step " << i + 1;
    EXPECT_GT(graph_sink.steps[i].forward_seconds, 0) << "step " << i + 1;
    EXPECT_GT(graph_sink.steps[i].backward_seconds, 0) << "step " << i + 1;
  }
}

// fp16 with a loss scale that doubles after every window: each window's
// replays must multiply by that window's scale (a device value the graph
// reads), or the unscaled gradients would be off by a power of two.
TEST(CudaGraphs, ReplaysReadTheLossScaleOfTheirWindow) {
  REQUIRE_CUDA_DEVICE();
  auto fp16 = [](bool cuda_graphs) {
    TrainConfig c = SmallMlp(cuda_graphs);
    c.precision = Precision::kFp16;
    c.loss_scaling = true;
    c.loss_scaler = {1024, 2, 0.5, 1};
    return c;
  };
  RecordingSink eager_sink, graph_sink;
  const auto eager = TrainAndCollect(fp16(false), &eager_sink);
  const auto graphed = TrainAndCollect(fp16(true), &graph_sink);
  ASSERT_TRUE(SaysGraphsStarted(graph_sink, "step 2"));
  ASSERT_GE(graph_sink.steps.size(), 4u);
  EXPECT_LT(graph_sink.steps[1].loss_scale, graph_sink.steps[3].loss_scale)
      << "the scale grew while the graph replayed";
  for (size_t i = 0; i < graph_sink.steps.size(); ++i) {
    EXPECT_EQ(graph_sink.steps[i].loss_scale, eager_sink.steps[i].loss_scale) << "step " << i + 1;
    EXPECT_EQ(graph_sink.steps[i].skipped, eager_sink.steps[i].skipped) << "step " << i + 1;
  }
  const double difference = MaxRelativeDifference(graphed, eager);
  std::printf("mlp fp16: graphs vs eager, max relative difference %.3g\n", difference);
  EXPECT_LE(difference, 1e-6);
}

// The other built-in models: the CNN (BatchNorm's running statistics are
// updated inside the graph) and the charlm under bf16 with activation
// checkpointing (its recomputation runs inside the backward graph). Their
// kernels include cuDNN and atomics, so the bound is the GPU's own
// run-to-run scatter's order rather than bit equality.
TrainConfig SmallCnn(bool cuda_graphs) {
  TrainConfig c;
  c.model.kind = ModelKind::kCnn;
  c.model.hidden = {16, 32};
  c.data.task = DataTask::kImageClassification;
  c.data.channels = 3;
  c.data.image_size = 16;
  c.data.outputs = 10;
  c.data.samples = 160;
  c.data.seed = 4;
  c.optimizer.kind = OptimizerKind::kSgd;
  c.optimizer.lr = 0.02;
  c.optimizer.momentum = 0.9;
  c.micro_batch = 8;
  c.accumulation_steps = 4;
  c.epochs = 1;
  c.seed = 6;
  c.device = "cuda:0";
  c.cuda_graphs = cuda_graphs;
  return c;
}

TrainConfig SmallCharLm(bool cuda_graphs) {
  TrainConfig c;
  c.model.kind = ModelKind::kCharLm;
  c.model.d_model = 64;
  c.model.heads = 4;
  c.model.layers = 2;
  c.model.checkpoint_activations = true;
  c.data.task = DataTask::kLanguageModeling;
  c.data.samples = 96;
  c.data.sequence_length = 32;
  c.data.min_sequence_length = 8;
  c.data.seed = 8;
  c.optimizer.kind = OptimizerKind::kAdamW;
  c.optimizer.lr = 1e-3;
  c.micro_batch = 4;
  c.accumulation_steps = 4;
  c.epochs = 1;
  c.seed = 9;
  c.precision = Precision::kBf16;
  c.device = "cuda:0";
  c.cuda_graphs = cuda_graphs;
  return c;
}

TEST(CudaGraphs, TheCnnAndTheCharLmTrainAlikeWithReplays) {
  REQUIRE_CUDA_DEVICE();
  for (const auto& [name, make, bound] :
       {std::tuple<const char*, TrainConfig (*)(bool), double>{"cnn fp32", SmallCnn, 1e-5},
        {"charlm bf16, activation checkpointing", SmallCharLm, 1e-4}}) {
    RecordingSink eager_sink, graph_sink;
    const auto eager = TrainAndCollect(make(false), &eager_sink);
    const auto graphed = TrainAndCollect(make(true), &graph_sink);
    EXPECT_TRUE(SaysGraphsStarted(graph_sink, "step 2")) << name;
    const double difference = MaxRelativeDifference(graphed, eager);
    std::printf("%s: graphs vs eager, max relative difference %.3g\n", name, difference);
    EXPECT_LE(difference, bound) << name;
  }
}

// A replay reuses memory the caching allocator counted only at capture; the
// window's reported peak must still be one micro-batch's, as eagerly.
TEST(CudaGraphs, TheWindowPeakWithReplaysIsTheEagerPeak) {
  REQUIRE_CUDA_DEVICE();
  auto peak = [](bool cuda_graphs) {
    TrainConfig c = SmallCnn(cuda_graphs);
    c.data.image_size = 32;
    c.data.samples = 256;
    c.micro_batch = 16;
    c.accumulation_steps = 8;
    c.max_steps = 2;  // the second window replays
    RecordingSink sink;
    TrainAndCollect(c, &sink);
    EXPECT_EQ(SaysGraphsStarted(sink, "step 2"), cuda_graphs);
    return sink.steps.back().tensor_peak_bytes;
  };
  const int64_t eager = peak(false);
  const int64_t replayed = peak(true);
  std::printf("cnn 16 x 8 window peak: eager %lld, replays %lld bytes\n",
              static_cast<long long>(eager), static_cast<long long>(replayed));
  EXPECT_GE(replayed, eager * 9 / 10);
  EXPECT_LE(replayed, eager * 11 / 10);
}

}  // namespace
}  // namespace accumulus::engine
