// Dynamic loss scaling per window: the GradScaler contract, with overflow
// injected on the CPU.
#include "worker/engine/loss_scaler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "tests/support/engine_test_support.h"
#include "worker/engine/trainer.h"

namespace accumulus::engine {
namespace {

TEST(LossScaler, BacksOffOnOverflowAndGrowsAfterTheInterval) {
  LossScaler scaler({/*initial_scale=*/1024, /*growth_factor=*/2, /*backoff_factor=*/0.5,
                     /*growth_interval=*/3});
  scaler.Update(false);
  scaler.Update(true);
  EXPECT_EQ(scaler.scale(), 512);
  EXPECT_EQ(scaler.skipped_windows(), 1);
  scaler.Update(false);
  scaler.Update(false);
  EXPECT_EQ(scaler.scale(), 512);
  scaler.Update(false);  // the third good window in a row
  EXPECT_EQ(scaler.scale(), 1024);
}

using Sink = testing::RecordingSink;
using testing::TrainAndCollect;

TrainConfig Config() {
  TrainConfig c;
  c.model.hidden = {16};
  c.data.samples = 256;
  c.data.features = 6;
  c.data.outputs = 3;
  c.data.seed = 4;
  c.optimizer.lr = 0.1;
  c.optimizer.momentum = 0.9;
  c.micro_batch = 8;
  c.accumulation_steps = 4;
  c.epochs = 1;  // 8 steps
  c.seed = 9;
  c.lr_schedule.kind = LrScheduleKind::kCosine;
  return c;
}

TEST(LossScaling, AnOverflowSkipsTheStepHalvesTheScaleAndHoldsTheSchedule) {
  TrainConfig c = Config();
  c.loss_scaling = true;
  c.loss_scaler = {1024, 2, 0.5, 3};
  TrainOptions options;
  options.after_backward = [](int64_t step, const std::vector<torch::Tensor>& params) {
    if (step == 2) params[0].grad().view({-1})[0] = std::numeric_limits<float>::infinity();
  };
  Sink sink;
  TrainAndCollect(c, &sink, options);
  ASSERT_EQ(sink.steps.size(), 8u);
  std::vector<double> scales;
  for (const auto& s : sink.steps) scales.push_back(s.loss_scale);
  EXPECT_EQ(scales, (std::vector<double>{1024, 1024, 512, 512, 512, 1024, 1024, 1024}));
  EXPECT_TRUE(sink.steps[1].skipped);
  EXPECT_EQ(sink.steps[1].skipped_steps, 1);
  EXPECT_FALSE(sink.steps[2].skipped);
  // The skipped step did not advance the LR schedule: step 3 uses the LR
  // step 2 would have used.
  EXPECT_EQ(sink.steps[2].lr, sink.steps[1].lr);
  EXPECT_LT(sink.steps[3].lr, sink.steps[2].lr);
}

TEST(LossScaling, WithoutOverflowItChangesNothing) {
  TrainConfig plain = Config();
  TrainConfig scaled = Config();
  scaled.loss_scaling = true;
  Sink a, b;
  const auto pa = TrainAndCollect(plain, &a);
  const auto pb = TrainAndCollect(scaled, &b);
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_LE((pa[i] - pb[i]).abs().max().item<double>(), 1e-6 * pa[i].abs().max().item<double>());
  }
}

TEST(MixedPrecision, Bf16AutocastTrainsCloseToFp32) {
  TrainConfig fp32 = Config();
  TrainConfig bf16 = Config();
  bf16.precision = Precision::kBf16;
  Sink a, b;
  const auto pa = TrainAndCollect(fp32, &a);
  const auto pb = TrainAndCollect(bf16, &b);
  double worst = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    worst = std::max(worst,
                     (pa[i] - pb[i]).abs().max().item<double>() / pa[i].abs().max().item<double>());
  }
  EXPECT_GT(worst, 0) << "autocast changed nothing: was it on?";
  EXPECT_LT(worst, 0.05);
  EXPECT_EQ(pb[0].scalar_type(), torch::kFloat32) << "master weights stay fp32";
}

TEST(MixedPrecision, Fp16OnTheCpuIsRefused) {
  TrainConfig c = Config();
  c.precision = Precision::kFp16;
  Sink sink;
  const Status status = Train(c, &sink);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("fp16"), std::string::npos);
}

}  // namespace
}  // namespace accumulus::engine
