// Adaptive accumulation in the engine: the global batch follows a noise
// scale that grows as a regression converges, within its bounds and its
// hysteresis; a run killed and resumed makes the same decisions and ends
// bit-identical; bounds that pin the batch reproduce fixed accumulation.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "tests/support/engine_test_support.h"

namespace accumulus::engine {
namespace {

using testing::BitIdentical;
using testing::RunTraining;

// Linear regression with label noise, trained by SGD: as the weights
// approach the teacher the gradient's mean shrinks and its noise does not,
// so B_noise = tr(Σ)/|G|² grows during training.
TrainConfig Regression() {
  TrainConfig c;
  c.model.hidden = {};  // linear
  c.data.task = DataTask::kRegression;
  c.data.samples = 4096;
  c.data.features = 16;
  c.data.outputs = 1;
  c.data.noise = 0.5;
  c.data.seed = 3;
  c.optimizer.lr = 0.02;
  c.micro_batch = 8;
  c.accumulation_steps = 2;  // global 16
  c.max_steps = 240;
  c.seed = 5;
  c.adaptive.min_global_batch = 16;
  c.adaptive.max_global_batch = 512;
  c.adaptive.interval_steps = 20;
  c.noise_scale_decay = 0.9;
  return c;
}

TEST(AdaptiveBatch, TheGlobalBatchFollowsTheNoiseScaleWithinItsBoundsAndHysteresis) {
  const auto run = RunTraining(Regression());
  ASSERT_TRUE(run->status.ok()) << run->status.ToString();
  const std::vector<BatchChange>& changes = run->sink.batch_changes;
  ASSERT_GE(changes.size(), 2u) << run->Logs();
  int64_t previous_step = 0;
  int64_t batch = 16;
  for (const BatchChange& c : changes) {
    EXPECT_GE(c.step - 1 - previous_step, 20) << "at most one change per interval";
    EXPECT_EQ(c.previous_global_batch, batch);
    EXPECT_LE(c.global_batch, 2 * batch) << "at most 2× up";
    EXPECT_GE(2 * c.global_batch, batch) << "at most 2× down";
    EXPECT_GE(c.global_batch, 16);
    EXPECT_LE(c.global_batch, 512);
    EXPECT_EQ(c.global_batch, c.accumulation_steps * 8);
    // Towards the noise scale that decided it.
    EXPECT_EQ(c.global_batch > batch, c.noise_scale > static_cast<double>(batch)) << c.reason;
    previous_step = c.step - 1;
    batch = c.global_batch;
  }
  EXPECT_GT(batch, 16) << "the noise scale grows as the regression converges";
  // Each step's window is the batch in force.
  size_t next_change = 0;
  int64_t in_force = 16;
  for (const StepReport& s : run->sink.steps) {
    if (next_change < changes.size() && s.step == changes[next_change].step) {
      in_force = changes[next_change++].global_batch;
    }
    ASSERT_EQ(s.effective_batch, in_force) << "step " << s.step;
    // Full windows, but for the short last one of an epoch.
    ASSERT_LE(s.samples, in_force) << "step " << s.step;
    ASSERT_EQ(s.microbatches, (s.samples + 7) / 8) << "step " << s.step;
  }
}

TEST(AdaptiveBatch, ARunKilledAndResumedMakesTheSameDecisionsAndEndsBitIdentical) {
  const auto reference = RunTraining(Regression());
  ASSERT_TRUE(reference->status.ok()) << reference->status.ToString();
  ASSERT_GE(reference->sink.batch_changes.size(), 2u);
  // Killed after a change has been made, before the next.
  const int64_t kill_step = reference->sink.batch_changes[1].step + 10;

  const testing::TempDir temp;
  TrainConfig c = Regression();
  c.checkpoint_dir = temp.path() + "/job";
  c.checkpoint_every_steps = 7;
  TrainOptions crash;
  crash.after_backward = [kill_step](int64_t step, const std::vector<torch::Tensor>&) {
    if (step == kill_step) throw std::runtime_error("killed mid-window");
  };
  const auto died = RunTraining(c, crash);
  ASSERT_FALSE(died->status.ok());
  const auto resumed = RunTraining(c);
  ASSERT_TRUE(resumed->status.ok()) << resumed->status.ToString();
  EXPECT_GT(resumed->sink.run.resumed_from_step, reference->sink.batch_changes[1].step);

  std::vector<BatchChange> decisions = died->sink.batch_changes;
  for (const BatchChange& b : resumed->sink.batch_changes) {
    if (b.step > resumed->sink.run.resumed_from_step) decisions.push_back(b);
  }
  ASSERT_EQ(decisions.size(), reference->sink.batch_changes.size());
  for (size_t i = 0; i < decisions.size(); ++i) {
    EXPECT_EQ(decisions[i].step, reference->sink.batch_changes[i].step);
    EXPECT_EQ(decisions[i].global_batch, reference->sink.batch_changes[i].global_batch);
    EXPECT_EQ(decisions[i].noise_scale, reference->sink.batch_changes[i].noise_scale);
  }
  EXPECT_EQ(resumed->sink.steps.back().step, reference->sink.steps.back().step);
  EXPECT_TRUE(BitIdentical(resumed->parameters, reference->parameters));
}

TEST(AdaptiveBatch, BoundsThatPinTheBatchReproduceFixedAccumulationExactly) {
  TrainConfig fixed = Regression();
  fixed.adaptive = {};
  fixed.accumulation_steps = 4;
  TrainConfig pinned = Regression();
  pinned.accumulation_steps = 4;
  pinned.adaptive.min_global_batch = pinned.adaptive.max_global_batch = 32;
  const auto a = RunTraining(fixed);
  const auto b = RunTraining(pinned);
  ASSERT_TRUE(a->status.ok() && b->status.ok());
  EXPECT_TRUE(b->sink.batch_changes.empty());
  EXPECT_TRUE(BitIdentical(a->parameters, b->parameters));
}

// lr_scaling follows the batch: the learning rate after a change is the
// rule's at the new batch.
TEST(AdaptiveBatch, TheLearningRateFollowsTheBatchByTheScalingRule) {
  TrainConfig c = Regression();
  c.lr_scaling = LrScaling::kSqrt;
  c.base_batch = 16;
  const auto run = RunTraining(c);
  ASSERT_TRUE(run->status.ok()) << run->status.ToString();
  ASSERT_FALSE(run->sink.batch_changes.empty());
  EXPECT_DOUBLE_EQ(run->sink.steps.front().lr, 0.02);
  for (const BatchChange& change : run->sink.batch_changes) {
    const double expected = 0.02 * std::sqrt(static_cast<double>(change.global_batch) / 16);
    EXPECT_DOUBLE_EQ(change.lr, expected);
    EXPECT_DOUBLE_EQ(run->sink.steps[static_cast<size_t>(change.step - 1)].lr, expected);
  }
}

}  // namespace
}  // namespace accumulus::engine
