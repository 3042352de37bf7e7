// The invariant accumulus exists for: k micro-batches give the gradient (and
// the update) of one batch of all their items — also for a short last window.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/window_schedule.h"
#include "worker/engine/mlp.h"
#include "worker/engine/sample_order.h"
#include "worker/engine/window_accumulator.h"

namespace accumulus::engine {
namespace {

namespace F = torch::nn::functional;

double MaxRelativeDifference(const torch::Tensor& actual, const torch::Tensor& expected) {
  const double scale = std::max(expected.abs().max().item<double>(), 1e-12);
  return (actual - expected).abs().max().item<double>() / scale;
}

std::vector<torch::Tensor> Gradients(torch::nn::Module& module) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : module.parameters()) grads.push_back(p.grad().clone());
  return grads;
}

void ExpectSameTensors(const std::vector<torch::Tensor>& actual,
                       const std::vector<torch::Tensor>& expected, double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_LE(MaxRelativeDifference(actual[i], expected[i]), tolerance) << "tensor " << i;
  }
}

// Feeds `inputs`/`targets` to the accumulator in micro-batches of `micro`.
WindowResult Accumulate(WindowAccumulator& window, const torch::Tensor& inputs,
                        const torch::Tensor& targets, int64_t micro) {
  for (int64_t b = 0; b < inputs.size(0); b += micro) {
    const int64_t e = std::min(inputs.size(0), b + micro);
    window.AddMicroBatch({inputs.slice(0, b, e), targets.slice(0, b, e)});
  }
  return window.FinishWindow();
}

TEST(GradientEquivalence, SeedCaseLinearMseFourMicroBatchesOfEight) {
  torch::manual_seed(0);
  torch::nn::Linear model(16, 1);
  const torch::Tensor x = torch::randn({32, 16});
  const torch::Tensor y = torch::randn({32, 1});

  const torch::Tensor full_loss = F::mse_loss(model(x), y);
  full_loss.backward();
  const std::vector<torch::Tensor> expected = Gradients(*model);
  model->zero_grad(/*set_to_none=*/true);

  WindowAccumulator window(
      model->parameters(), [&](const torch::Tensor& in) { return model(in); },
      LossKind::kMeanSquaredError, Normalization::kExact, /*nominal_microbatches=*/4,
      /*max_grad_norm=*/0);
  const WindowResult result = Accumulate(window, x, y, 8);

  ExpectSameTensors(Gradients(*model), expected, 1e-6);
  EXPECT_EQ(result.microbatches, 4);
  EXPECT_EQ(result.samples, 32);
  EXPECT_EQ(result.loss_items, 32);
  EXPECT_NEAR(result.loss, full_loss.item<double>(), 1e-6 * full_loss.item<double>());
}

TEST(GradientEquivalence, MlpCrossEntropyMatchesFullBatchGradient) {
  torch::manual_seed(1);
  Mlp model(20, std::vector<int64_t>{32, 32}, 5);
  const torch::Tensor x = torch::randn({64, 20});
  const torch::Tensor y = torch::randint(0, 5, {64});

  F::cross_entropy(model(x), y).backward();
  const std::vector<torch::Tensor> expected = Gradients(*model);
  model->zero_grad(true);

  WindowAccumulator window(
      model->parameters(), [&](const torch::Tensor& in) { return model(in); },
      LossKind::kCrossEntropy, Normalization::kExact, 8, 0);
  Accumulate(window, x, y, 8);
  ExpectSameTensors(Gradients(*model), expected, 1e-6);
}

// 36 samples, micro-batch 8, accumulation 4: the second window holds the
// last 4 samples of the epoch; its update must be that of those 4 samples.
TEST(GradientEquivalence, ShortLastWindowIsNormalizedByItsRealCount) {
  torch::manual_seed(2);
  Mlp model(6, std::vector<int64_t>{16}, 3);
  const torch::Tensor x = torch::randn({36, 6});
  const torch::Tensor y = torch::randint(0, 3, {36});
  const std::vector<int64_t> order = EpochPermutation(36, /*seed=*/5, /*epoch=*/0);
  WindowScheduleConfig schedule_config;
  schedule_config.samples_per_epoch = 36;
  schedule_config.micro_batch = 8;
  schedule_config.accumulation_steps = 4;
  schedule_config.epochs = 1;
  WindowSchedule schedule(schedule_config);
  Window second;
  ASSERT_TRUE(schedule.Next(&second) && schedule.Next(&second));
  const WindowRange last{second.segments.at(0).begin, second.segments.at(0).end};
  ASSERT_EQ(last.size(), 4);
  const std::vector<WindowRange> micro = MicroBatchesOf(last, 8, 4, /*rank=*/0);
  ASSERT_EQ(micro.size(), 1u);
  const torch::Tensor index =
      torch::tensor(std::vector<int64_t>(order.begin() + last.begin, order.begin() + last.end));
  const torch::Tensor xs = x.index_select(0, index);
  const torch::Tensor ys = y.index_select(0, index);

  F::cross_entropy(model(xs), ys).backward();
  const std::vector<torch::Tensor> expected = Gradients(*model);
  model->zero_grad(true);

  auto forward = [&](const torch::Tensor& in) { return model(in); };
  WindowAccumulator exact(model->parameters(), forward, LossKind::kCrossEntropy,
                          Normalization::kExact, 4, 0);
  const WindowResult result = Accumulate(exact, xs, ys, 8);
  EXPECT_EQ(result.samples, 4);
  EXPECT_EQ(result.microbatches, 1);
  ExpectSameTensors(Gradients(*model), expected, 1e-6);
  model->zero_grad(true);

  // The tutorial formula divides this window by the nominal k = 4 and so
  // shrinks its gradient fourfold: the bug exact normalization avoids.
  WindowAccumulator tutorial(model->parameters(), forward, LossKind::kCrossEntropy,
                             Normalization::kPerMicrobatchMean, 4, 0);
  Accumulate(tutorial, xs, ys, 8);
  const std::vector<torch::Tensor> naive = Gradients(*model);
  for (size_t i = 0; i < naive.size(); ++i) {
    EXPECT_LE(MaxRelativeDifference(naive[i] * 4, expected[i]), 1e-6);
    EXPECT_GT(MaxRelativeDifference(naive[i], expected[i]), 0.5);
  }
}

TEST(GradientEquivalence, ClippingAppliesOnceToTheWindowGradient) {
  torch::manual_seed(3);
  Mlp model(8, std::vector<int64_t>{16}, 4);
  const torch::Tensor x = torch::randn({32, 8}) * 10;
  const torch::Tensor y = torch::randint(0, 4, {32});
  F::cross_entropy(model(x), y).backward();
  const std::vector<torch::Tensor> full = Gradients(*model);
  const double full_norm = GradientNorm(model->parameters());
  model->zero_grad(true);

  const double max_norm = full_norm / 4;
  WindowAccumulator window(
      model->parameters(), [&](const torch::Tensor& in) { return model(in); },
      LossKind::kCrossEntropy, Normalization::kExact, 4, max_norm);
  const WindowResult result = Accumulate(window, x, y, 8);
  EXPECT_TRUE(result.clipped);
  EXPECT_NEAR(result.grad_norm, full_norm, 1e-6 * full_norm);
  EXPECT_NEAR(GradientNorm(model->parameters()), max_norm, 1e-5 * max_norm);
  // Clipped as a whole: the direction is the full-batch gradient's.
  const double coef = max_norm / (full_norm + 1e-6);
  const std::vector<torch::Tensor> clipped = Gradients(*model);
  for (size_t i = 0; i < clipped.size(); ++i) {
    EXPECT_LE(MaxRelativeDifference(clipped[i], full[i] * coef), 1e-6);
  }
}

// One optimizer step after a window equals one step on the full batch.
class OptimizerStepEquivalence : public ::testing::TestWithParam<std::string> {};

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(const std::string& kind, Mlp& model) {
  if (kind == "sgd") {
    return std::make_unique<torch::optim::SGD>(
        model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-3));
  }
  return std::make_unique<torch::optim::AdamW>(model->parameters(),
                                               torch::optim::AdamWOptions(1e-2).weight_decay(0.01));
}

TEST_P(OptimizerStepEquivalence, ThreeStepsMatchFullBatchSteps) {
  torch::manual_seed(4);
  const torch::Tensor x = torch::randn({3, 48, 10});
  const torch::Tensor y = torch::randint(0, 4, {3, 48});
  torch::manual_seed(5);
  Mlp accumulated(10, std::vector<int64_t>{24, 24}, 4);
  torch::manual_seed(5);
  Mlp reference(10, std::vector<int64_t>{24, 24}, 4);
  auto opt_a = MakeOptimizer(GetParam(), accumulated);
  auto opt_r = MakeOptimizer(GetParam(), reference);
  WindowAccumulator window(
      accumulated->parameters(), [&](const torch::Tensor& in) { return accumulated(in); },
      LossKind::kCrossEntropy, Normalization::kExact, 6, 0);

  for (int step = 0; step < 3; ++step) {
    Accumulate(window, x[step], y[step], 8);  // 6 micro-batches of 8
    opt_a->step();
    accumulated->zero_grad(true);

    F::cross_entropy(reference(x[step]), y[step]).backward();
    opt_r->step();
    reference->zero_grad(true);
  }
  std::vector<torch::Tensor> a, r;
  for (const auto& p : accumulated->parameters()) a.push_back(p.detach());
  for (const auto& p : reference->parameters()) r.push_back(p.detach());
  ExpectSameTensors(a, r, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, OptimizerStepEquivalence, ::testing::Values("sgd", "adamw"));

}  // namespace
}  // namespace accumulus::engine
