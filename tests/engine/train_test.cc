// The whole loop: Train() with different splits of the same global batch ends
// with the parameters of a plain full-batch loop over the same sample order.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/window_schedule.h"
#include "tests/support/engine_test_support.h"
#include "worker/engine/dataset.h"
#include "worker/engine/lr_schedule.h"
#include "worker/engine/mlp.h"
#include "worker/engine/model_factory.h"
#include "worker/engine/sample_order.h"
#include "worker/engine/trainer.h"

namespace accumulus::engine {
namespace {

using testing::MaxRelativeDifference;
using testing::RecordingSink;
using testing::TrainAndCollect;
namespace F = torch::nn::functional;

TrainConfig SmallConfig(int64_t micro, int64_t accumulation, OptimizerKind optimizer) {
  TrainConfig c;
  c.model.hidden = {16};
  c.data.samples = 100;  // global batch 32: windows of 32, 32, 32 and a short 4
  c.data.features = 6;
  c.data.outputs = 3;
  c.data.seed = 11;
  c.optimizer.kind = optimizer;
  c.optimizer.lr = optimizer == OptimizerKind::kSgd ? 0.1 : 0.01;
  c.optimizer.momentum = optimizer == OptimizerKind::kSgd ? 0.9 : 0;
  c.optimizer.weight_decay = 0.01;
  c.micro_batch = micro;
  c.accumulation_steps = accumulation;
  c.epochs = 2;
  c.seed = 21;
  return c;
}

// The plain loop: one mean-loss backward over each window's samples taken
// whole, with the learning rate the schedule gives each optimizer step.
std::vector<torch::Tensor> FullBatchReference(const TrainConfig& c) {
  std::unique_ptr<Dataset> data = *MakeSyntheticDataset(c.data);
  torch::manual_seed(c.seed);
  std::unique_ptr<Model> model =
      *BuildModel(c.model, data->shape(), LossOf(c.model.loss, c.data.task));
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  if (c.optimizer.kind == OptimizerKind::kSgd) {
    optimizer = std::make_unique<torch::optim::SGD>(model->Parameters(),
                                                    torch::optim::SGDOptions(c.optimizer.lr)
                                                        .momentum(c.optimizer.momentum)
                                                        .weight_decay(c.optimizer.weight_decay));
  } else {
    optimizer = std::make_unique<torch::optim::AdamW>(
        model->Parameters(),
        torch::optim::AdamWOptions(c.optimizer.lr).weight_decay(c.optimizer.weight_decay));
  }
  WindowScheduleConfig sc;
  sc.samples_per_epoch = c.data.samples;
  sc.micro_batch = c.micro_batch;
  sc.accumulation_steps = c.accumulation_steps;
  sc.policy = c.partial_window;
  sc.epochs = c.epochs;
  WindowSchedule schedule(sc);
  const int64_t total = schedule.steps_total();
  Window w;
  while (schedule.Next(&w)) {
    std::vector<int64_t> index;
    for (const Segment& s : w.segments) {
      const std::vector<int64_t> order = EpochPermutation(c.data.samples, c.seed, s.epoch);
      index.insert(index.end(), order.begin() + s.begin, order.begin() + s.end);
    }
    const Batch batch = data->Gather(torch::tensor(index));
    for (auto& group : optimizer->param_groups()) {
      group.options().set_lr(LearningRate(c.lr_schedule, c.optimizer.lr, w.step - 1, total));
    }
    const torch::Tensor outputs = model->Forward(batch.inputs);
    // PyTorch's own mean losses over the whole window: for tokens, the mean
    // over the targets that are not ignore_index.
    if (c.data.task == DataTask::kLanguageModeling) {
      F::cross_entropy(outputs.reshape({-1, outputs.size(-1)}), batch.targets.reshape({-1}),
                       F::CrossEntropyFuncOptions().ignore_index(kIgnoreIndex))
          .backward();
    } else {
      F::cross_entropy(outputs, batch.targets).backward();
    }
    optimizer->step();
    model->ZeroGrad();
  }
  std::vector<torch::Tensor> params;
  for (const auto& p : model->Parameters()) params.push_back(p.detach().clone());
  return params;
}

class TrainEquivalence : public ::testing::TestWithParam<OptimizerKind> {};

TEST_P(TrainEquivalence, EverySplitMatchesTheFullBatchLoop) {
  const std::vector<torch::Tensor> reference = FullBatchReference(SmallConfig(32, 1, GetParam()));
  for (auto [micro, accumulation] : {std::pair<int64_t, int64_t>{32, 1}, {8, 4}, {4, 8}}) {
    RecordingSink sink;
    const auto params = TrainAndCollect(SmallConfig(micro, accumulation, GetParam()), &sink);
    ASSERT_EQ(params.size(), reference.size());
    EXPECT_LE(MaxRelativeDifference(params, reference), 1e-5)
        << "micro " << micro << " × accumulation " << accumulation;
  }
}

INSTANTIATE_TEST_SUITE_P(Optimizers, TrainEquivalence,
                         ::testing::Values(OptimizerKind::kSgd, OptimizerKind::kAdamW));

class PartialWindowEquivalence : public ::testing::TestWithParam<PartialWindow> {};

TEST_P(PartialWindowEquivalence, EverySplitMatchesTheFullBatchLoop) {
  auto config = [](int64_t micro, int64_t accumulation) {
    TrainConfig c = SmallConfig(micro, accumulation, OptimizerKind::kSgd);
    c.partial_window = GetParam();
    c.lr_schedule.kind = LrScheduleKind::kCosine;
    c.lr_schedule.warmup_steps = 2;
    c.epochs = 3;
    return c;
  };
  const std::vector<torch::Tensor> reference = FullBatchReference(config(32, 1));
  for (auto [micro, accumulation] : {std::pair<int64_t, int64_t>{8, 4}, {4, 8}}) {
    RecordingSink sink;
    const auto params = TrainAndCollect(config(micro, accumulation), &sink);
    EXPECT_LE(MaxRelativeDifference(params, reference), 1e-5)
        << "micro " << micro << " × accumulation " << accumulation;
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, PartialWindowEquivalence,
                         ::testing::Values(PartialWindow::kNormalize, PartialWindow::kDrop,
                                           PartialWindow::kCarry));

TEST(Train, ACnnOfMoreBlocksThanItsImagesCanBeHalvedIsTheSpecsFault) {
  // 8 × 8 images: three halvings leave 1 × 1, a fourth nothing.
  TrainConfig c;
  c.model.kind = ModelKind::kCnn;
  c.model.hidden = {4, 4, 4, 4};
  c.data.task = DataTask::kImageClassification;
  c.data.samples = 16;
  c.data.channels = 1;
  c.data.image_size = 8;
  c.data.outputs = 2;
  c.optimizer.lr = 0.1;
  c.micro_batch = 4;
  c.accumulation_steps = 2;
  c.max_steps = 1;
  testing::RecordingSink sink;
  const Status status = Train(c, &sink);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_EQ(status.fault(), Fault::kSpec);
  EXPECT_EQ(status.message(),
            "model.hidden: 4 conv blocks, each halving the image, leave nothing of a 8 × 8 image; "
            "it takes at most 3");
  c.model.hidden = {4, 4, 4};
  EXPECT_TRUE(Train(c, &sink).ok());
}

TEST(Train, ARunThatDivergesStopsBeforeItsFirstNonFiniteStep) {
  TrainConfig c;
  c.model.kind = ModelKind::kMlp;
  c.model.hidden = {64};
  c.data.task = DataTask::kRegression;
  c.data.samples = 256;
  c.data.features = 4;
  c.data.outputs = 1;
  c.optimizer.lr = 900;
  c.micro_batch = 8;
  c.accumulation_steps = 2;
  c.max_steps = 50;
  c.seed = 2;
  testing::RecordingSink sink;
  const Status status = Train(c, &sink);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_EQ(status.fault(), Fault::kSpec);
  ASSERT_LT(sink.steps.size(), 50u);
  const std::string step = std::to_string(sink.steps.size() + 1);
  EXPECT_EQ(status.message().rfind("training diverged in step " + step + ": its loss is ", 0), 0)
      << status.message();
  EXPECT_NE(status.message().find("at lr 900; the step was not applied (the parameters are "
                                  "those after step " +
                                  std::to_string(sink.steps.size()) + ")"),
            std::string::npos)
      << status.message();
  for (const StepReport& s : sink.steps) EXPECT_TRUE(std::isfinite(s.loss)) << s.step;
  // A run at a learning rate it takes is never stopped.
  c.max_grad_norm = 1.0;
  c.optimizer.lr = 0.05;
  testing::RecordingSink clipped;
  EXPECT_TRUE(Train(c, &clipped).ok());
}

TEST(Train, PlansAndReportsStepsOfThePolicy) {
  // 100 samples, global batch 32, 3 epochs.
  const std::vector<std::pair<PartialWindow, int64_t>> expected = {
      {PartialWindow::kNormalize, 12}, {PartialWindow::kDrop, 9}, {PartialWindow::kCarry, 10}};
  for (const auto& [policy, steps] : expected) {
    TrainConfig c = SmallConfig(8, 4, OptimizerKind::kSgd);
    c.partial_window = policy;
    c.epochs = 3;
    RecordingSink sink;
    TrainAndCollect(c, &sink);
    EXPECT_EQ(sink.run.steps_total, steps);
    EXPECT_EQ(static_cast<int64_t>(sink.steps.size()), steps);
  }
}

TEST(Train, StepsTheLearningRateOncePerOptimizerStep) {
  TrainConfig c = SmallConfig(4, 8, OptimizerKind::kSgd);
  c.lr_schedule.kind = LrScheduleKind::kCosine;
  c.lr_schedule.warmup_steps = 3;
  RecordingSink sink;
  TrainAndCollect(c, &sink);
  ASSERT_EQ(sink.steps.size(), 8u);
  for (const StepReport& s : sink.steps) {
    EXPECT_DOUBLE_EQ(s.lr, LearningRate(c.lr_schedule, c.optimizer.lr, s.step - 1, 8));
  }
  EXPECT_DOUBLE_EQ(sink.run.lr_first, sink.steps.front().lr);
  EXPECT_DOUBLE_EQ(sink.run.lr_last, sink.steps.back().lr);
}

TEST(Train, LinearScalingMultipliesTheLrByGlobalOverBaseBatch) {
  TrainConfig c = SmallConfig(8, 4, OptimizerKind::kSgd);
  c.lr_scaling = LrScaling::kLinear;
  c.base_batch = 8;
  RecordingSink sink;
  TrainAndCollect(c, &sink);
  EXPECT_DOUBLE_EQ(sink.steps.front().lr, c.optimizer.lr * 32 / 8);
}

TEST(Train, NominalBatchRampsAccumulationAndReportsIt) {
  TrainConfig c = SmallConfig(4, 0, OptimizerKind::kSgd);
  c.nominal_batch = 16;  // full accumulation 4
  c.lr_schedule.warmup_steps = 3;
  RecordingSink sink;
  TrainAndCollect(c, &sink);
  EXPECT_EQ(sink.run.accumulation_ramp, (std::vector<int64_t>{1, 2, 3, 4}));
  ASSERT_GE(sink.steps.size(), 5u);
  EXPECT_EQ(sink.steps[0].effective_batch, 4);
  EXPECT_EQ(sink.steps[1].effective_batch, 8);
  EXPECT_EQ(sink.steps[4].effective_batch, 16);
}

TEST(Train, TutorialNormalizationDiffersOnShortWindows) {
  TrainConfig exact = SmallConfig(8, 4, OptimizerKind::kSgd);
  TrainConfig tutorial = exact;
  tutorial.normalization = Normalization::kPerMicrobatchMean;
  RecordingSink a, b;
  const auto pa = TrainAndCollect(exact, &a);
  const auto pb = TrainAndCollect(tutorial, &b);
  // The first short window (step 4: 4 samples, one micro-batch) is divided
  // by k = 4 in the tutorial loop: its gradient is 4× too small.
  EXPECT_NEAR(b.steps[3].grad_norm * 4, a.steps[3].grad_norm, 1e-5 * a.steps[3].grad_norm);
  EXPECT_NEAR(b.steps[0].grad_norm, a.steps[0].grad_norm, 1e-5 * a.steps[0].grad_norm);
  EXPECT_GT(MaxRelativeDifference(pb, pa), 1e-3);
}

TEST(Train, ReportsOneStepPerWindowWithTheWindowsCounts) {
  RecordingSink sink;
  TrainAndCollect(SmallConfig(8, 4, OptimizerKind::kSgd), &sink);
  EXPECT_EQ(sink.run.steps_per_epoch, 4);
  EXPECT_EQ(sink.run.steps_total, 8);
  ASSERT_EQ(sink.steps.size(), 8u);
  for (size_t i = 0; i < sink.steps.size(); ++i) {
    const StepReport& s = sink.steps[i];
    const bool last_of_epoch = i % 4 == 3;
    EXPECT_EQ(s.step, static_cast<int64_t>(i) + 1);
    EXPECT_EQ(s.epoch, static_cast<int64_t>(i) / 4);
    EXPECT_EQ(s.effective_batch, 32);
    EXPECT_EQ(s.samples, last_of_epoch ? 4 : 32);
    EXPECT_EQ(s.microbatches, last_of_epoch ? 1 : 4);
    EXPECT_EQ(s.loss_items, s.samples);
    EXPECT_GT(s.tensor_peak_bytes, 0);
    EXPECT_GE(s.tensor_peak_bytes, s.tensor_bytes);
  }
}

TEST(Train, ReportedLossDoesNotDependOnTheSplit) {
  RecordingSink one, many;
  TrainAndCollect(SmallConfig(32, 1, OptimizerKind::kSgd), &one);
  TrainAndCollect(SmallConfig(4, 8, OptimizerKind::kSgd), &many);
  ASSERT_EQ(one.steps.size(), many.steps.size());
  for (size_t i = 0; i < one.steps.size(); ++i) {
    EXPECT_NEAR(many.steps[i].loss, one.steps[i].loss, 1e-5 * one.steps[i].loss) << "step " << i;
  }
}

TEST(Train, StopsAtAWindowBoundaryWhenAsked) {
  std::atomic<bool> stop{true};
  RecordingSink sink;
  TrainOptions options;
  options.stop_requested = &stop;
  const Status status = engine::Train(SmallConfig(8, 4, OptimizerKind::kSgd), &sink, options);
  EXPECT_EQ(status.code(), StatusCode::kCancelled);
  EXPECT_TRUE(sink.steps.empty());
}

}  // namespace
}  // namespace accumulus::engine

namespace accumulus::engine {
namespace {

TEST(Train, RejectsADeviceItCannotUse) {
  RecordingSink sink;
  TrainConfig config = SmallConfig(8, 4, OptimizerKind::kSgd);
  config.device = "abacus:0";
  EXPECT_EQ(engine::Train(config, &sink).code(), StatusCode::kInvalidArgument);
  if (!torch::cuda::is_available()) {
    config.device = "cuda:0";
    const Status status = engine::Train(config, &sink);
    EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition) << status.ToString();
  }
  EXPECT_TRUE(sink.steps.empty());
}

}  // namespace
}  // namespace accumulus::engine

namespace accumulus::engine {
namespace {

TrainConfig CnnConfig(int64_t micro, int64_t accumulation, bool batch_norm) {
  TrainConfig c = SmallConfig(micro, accumulation, OptimizerKind::kSgd);
  c.model.kind = ModelKind::kCnn;
  c.model.hidden = {4, 8};
  c.model.batch_norm = batch_norm;
  c.data.task = DataTask::kImageClassification;
  c.data.channels = 3;
  c.data.image_size = 8;
  c.data.outputs = 3;
  c.data.samples = 72;  // global batch 32: two full windows and one of 8
  c.epochs = 1;
  return c;
}

// SGD, not AdamW: attention's key bias has a gradient that is zero up to
// rounding (softmax ignores a shift shared by all keys), and Adam's division
// by sqrt(v) turns that rounding noise into full-size, sign-random updates —
// equal gradients, unequal parameters.
TrainConfig CharLmConfig(int64_t micro, int64_t accumulation, Normalization normalization) {
  TrainConfig c = SmallConfig(micro, accumulation, OptimizerKind::kSgd);
  c.model.kind = ModelKind::kCharLm;
  c.model.d_model = 32;
  c.model.heads = 4;
  c.model.layers = 1;
  c.data.task = DataTask::kLanguageModeling;
  c.data.samples = 64;  // two windows of 32 documents
  c.data.sequence_length = 24;
  c.data.min_sequence_length = 2;  // very ragged: 2..24 tokens
  c.normalization = normalization;
  c.epochs = 1;
  return c;
}

TEST(Cnn, WithoutBatchNormEverySplitMatchesTheFullBatchLoop) {
  const auto reference = FullBatchReference(CnnConfig(32, 1, /*batch_norm=*/false));
  for (auto [micro, accumulation] : {std::pair<int64_t, int64_t>{8, 4}, {4, 8}}) {
    RecordingSink sink;
    const auto params =
        TrainAndCollect(CnnConfig(micro, accumulation, /*batch_norm=*/false), &sink);
    EXPECT_LE(MaxRelativeDifference(params, reference), 1e-5) << "micro " << micro;
    EXPECT_TRUE(sink.logs.empty());
  }
}

TEST(Cnn, BatchNormWithASmallMicroBatchIsWarnedAbout) {
  RecordingSink sink;
  TrainAndCollect(CnnConfig(4, 8, /*batch_norm=*/true), &sink);
  ASSERT_EQ(sink.logs.size(), 1u);
  EXPECT_NE(sink.logs[0].find("BatchNorm"), std::string::npos) << sink.logs[0];
  EXPECT_NE(sink.logs[0].find("micro_batch is 4"), std::string::npos) << sink.logs[0];
}

TEST(CharLm, TokenNormalizationMatchesTheFullBatchLoopOnRaggedDocuments) {
  const auto reference = FullBatchReference(CharLmConfig(32, 1, Normalization::kExact));
  for (auto [micro, accumulation] : {std::pair<int64_t, int64_t>{8, 4}, {4, 8}}) {
    RecordingSink sink;
    const auto params =
        TrainAndCollect(CharLmConfig(micro, accumulation, Normalization::kExact), &sink);
    EXPECT_LE(MaxRelativeDifference(params, reference), 1e-5) << "micro " << micro;
    // Items are the real tokens, not documents × positions.
    ASSERT_FALSE(sink.steps.empty());
    EXPECT_LT(sink.steps[0].loss_items, 32 * 24);
    EXPECT_GT(sink.steps[0].loss_items, 32);
  }
}

TEST(CharLm, PerMicroBatchMeansMisweightRaggedDocuments) {
  const auto reference = FullBatchReference(CharLmConfig(32, 1, Normalization::kExact));
  RecordingSink sink;
  const auto tutorial =
      TrainAndCollect(CharLmConfig(4, 8, Normalization::kPerMicrobatchMean), &sink);
  // Each micro-batch's mean weights its tokens by 1 / (its own token count):
  // documents in short micro-batches count more. The update measurably differs.
  EXPECT_GT(MaxRelativeDifference(tutorial, reference), 1e-3);
}

}  // namespace
}  // namespace accumulus::engine

namespace accumulus::engine {
namespace {

// Every model × every partial-window policy: a run split into micro-batches
// ends where the full-batch loop over the same windows ends.
using ModelPolicy = std::tuple<std::string, PartialWindow>;
class ModelPolicyMatrix : public ::testing::TestWithParam<ModelPolicy> {};

TEST_P(ModelPolicyMatrix, SplitRunsMatchTheFullBatchLoop) {
  const auto& [model, policy] = GetParam();
  auto config = [model = model, policy = policy](int64_t micro, int64_t accumulation) {
    TrainConfig c = model == "cnn"      ? CnnConfig(micro, accumulation, /*batch_norm=*/false)
                    : model == "charlm" ? CharLmConfig(micro, accumulation, Normalization::kExact)
                                        : SmallConfig(micro, accumulation, OptimizerKind::kSgd);
    c.data.samples = model == "charlm" ? 40 : 72;  // short windows under every policy
    c.partial_window = policy;
    c.epochs = 2;
    return c;
  };
  const auto reference = FullBatchReference(config(32, 1));
  RecordingSink sink;
  const auto params = TrainAndCollect(config(8, 4), &sink);
  EXPECT_LE(MaxRelativeDifference(params, reference), 1e-5);
}

// Each step says where its time went: forward, backward and optimizer each
// took some, and together no more than the whole step.
TEST(StepReport, ThePhasesOfAWindowAreWithinItsTime) {
  RecordingSink sink;
  TrainAndCollect(SmallConfig(8, 4, OptimizerKind::kAdamW), &sink);
  ASSERT_FALSE(sink.steps.empty());
  for (const StepReport& s : sink.steps) {
    EXPECT_GT(s.forward_seconds, 0) << "step " << s.step;
    EXPECT_GT(s.backward_seconds, 0) << "step " << s.step;
    EXPECT_GT(s.optimizer_seconds, 0) << "step " << s.step;
    EXPECT_LE(s.forward_seconds + s.backward_seconds + s.optimizer_seconds + s.comm_seconds,
              s.step_seconds)
        << "step " << s.step;
    EXPECT_EQ(s.tokens, 0) << "not a token data set";
  }
}

// A token data set's steps count its target tokens: over an epoch, every
// non-padding target of the data set once.
TEST(StepReport, TokensAreTheTargetTokensOfTheWindow) {
  const TrainConfig c = CharLmConfig(8, 4, Normalization::kExact);
  RecordingSink sink;
  TrainAndCollect(c, &sink);
  std::unique_ptr<Dataset> data = *MakeSyntheticDataset(c.data);
  const Batch all = data->Gather(torch::arange(data->size()));
  const int64_t targets = (all.targets != kIgnoreIndex).sum().item<int64_t>();
  int64_t tokens = 0;
  for (const StepReport& s : sink.steps) {
    EXPECT_EQ(s.tokens, s.loss_items) << "step " << s.step;
    tokens += s.tokens;
  }
  EXPECT_EQ(tokens, targets * c.epochs);
}

std::string MatrixName(const ::testing::TestParamInfo<ModelPolicy>& info) {
  static const char* const kPolicies[] = {"Normalize", "Drop", "Carry"};
  return std::get<0>(info.param) + kPolicies[static_cast<int>(std::get<1>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(All, ModelPolicyMatrix,
                         ::testing::Combine(::testing::Values("mlp", "cnn", "charlm"),
                                            ::testing::Values(PartialWindow::kNormalize,
                                                              PartialWindow::kDrop,
                                                              PartialWindow::kCarry)),
                         MatrixName);

}  // namespace
}  // namespace accumulus::engine
