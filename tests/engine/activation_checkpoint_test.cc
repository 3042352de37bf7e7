// Activation checkpointing: the same gradients as the plain forward (also
// under bf16 autocast and with BatchNorm), BatchNorm statistics moved once, a
// lower peak where blocks hold activations, and the same trained parameters.
#include "worker/engine/activation_checkpoint.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/support/engine_test_support.h"
#include "worker/engine/autocast_scope.h"
#include "worker/engine/loss.h"
#include "worker/engine/model_factory.h"
#include "worker/engine/tracking_allocator.h"
#include "worker/engine/trainer.h"

namespace accumulus::engine {
namespace {

using testing::MaxRelativeDifference;

struct Case {
  const char* name;
  TrainConfig config;
};

TrainConfig Mlp() {
  TrainConfig c;
  c.model.hidden = {64, 64};
  c.data.samples = 64;
  c.data.features = 16;
  c.data.outputs = 4;
  c.data.seed = 3;
  c.global_batch = 16;
  c.epochs = 1;
  c.seed = 5;
  c.optimizer.lr = 0.05;
  c.optimizer.momentum = 0.9;
  return c;
}

TrainConfig Cnn() {
  TrainConfig c = Mlp();
  c.model.kind = ModelKind::kCnn;
  c.model.hidden = {8, 16};
  c.model.batch_norm = true;
  c.data.task = DataTask::kImageClassification;
  c.data.channels = 3;
  c.data.image_size = 16;
  return c;
}

TrainConfig CharLm() {
  TrainConfig c = Mlp();
  c.model.kind = ModelKind::kCharLm;
  c.model.d_model = 32;
  c.model.heads = 4;
  c.model.layers = 2;
  c.data.task = DataTask::kLanguageModeling;
  c.data.sequence_length = 32;
  c.data.min_sequence_length = 8;
  return c;
}

// One forward and backward of `samples` samples: the gradients and the peak tensor bytes above the
// level before the forward.
struct Pass {
  std::vector<torch::Tensor> grads;
  int64_t peak_bytes = 0;
};

Pass ForwardBackward(TrainConfig c, bool checkpoint, Precision precision, int64_t samples) {
  c.model.checkpoint_activations = checkpoint;
  std::unique_ptr<Dataset> data = *MakeDataset(c.data);
  torch::manual_seed(c.seed);
  std::unique_ptr<Model> model =
      *BuildModel(c.model, data->shape(), LossOf(c.model.loss, c.data.task));
  const Batch batch = data->Gather(torch::arange(samples));
  const LossKind loss = LossOf(c.model.loss, c.data.task);

  TrackingCpuAllocator* memory = TrackingCpuAllocator::Install();
  memory->ResetPeak();
  const int64_t before = memory->current_bytes();
  torch::Tensor outputs;
  {
    AutocastScope autocast(precision, c10::DeviceType::CPU);
    outputs = model->Forward(batch.inputs);
  }
  SumLoss(loss, outputs.to(torch::kFloat32), batch.targets).sum.backward();
  outputs = torch::Tensor();

  Pass pass;
  pass.peak_bytes = memory->peak_bytes() - before;
  for (const auto& p : model->Parameters()) pass.grads.push_back(p.grad().clone());
  return pass;
}

class ActivationCheckpoint : public ::testing::TestWithParam<Case> {};

TEST_P(ActivationCheckpoint, GivesTheSameGradients) {
  const TrainConfig& c = GetParam().config;
  const Pass plain = ForwardBackward(c, false, Precision::kFp32, 16);
  const Pass checkpointed = ForwardBackward(c, true, Precision::kFp32, 16);
  ASSERT_EQ(plain.grads.size(), checkpointed.grads.size());
  EXPECT_LE(MaxRelativeDifference(checkpointed.grads, plain.grads), 1e-6);
}

TEST_P(ActivationCheckpoint, GivesTheSameGradientsUnderBf16Autocast) {
  const TrainConfig& c = GetParam().config;
  const Pass plain = ForwardBackward(c, false, Precision::kBf16, 16);
  const Pass checkpointed = ForwardBackward(c, true, Precision::kBf16, 16);
  // The recomputation repeats the forward's bf16 arithmetic exactly.
  EXPECT_LE(MaxRelativeDifference(checkpointed.grads, plain.grads), 1e-6);
}

TEST_P(ActivationCheckpoint, TrainsToTheSameParameters) {
  TrainConfig c = GetParam().config;
  c.micro_batch = 4;
  c.accumulation_steps = 4;
  std::vector<torch::Tensor> plain;
  std::vector<torch::Tensor> checkpointed;
  testing::RecordingSink a;
  testing::RecordingSink b;
  TrainOptions options;
  options.final_parameters = &plain;
  ASSERT_TRUE(Train(c, &a, options).ok());
  c.model.checkpoint_activations = true;
  options.final_parameters = &checkpointed;
  ASSERT_TRUE(Train(c, &b, options).ok());
  EXPECT_LE(MaxRelativeDifference(checkpointed, plain), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(BuiltInModels, ActivationCheckpoint,
                         ::testing::Values(Case{"mlp", Mlp()}, Case{"cnn", Cnn()},
                                           Case{"charlm", CharLm()}),
                         [](const auto& info) { return std::string(info.param.name); });

// A checkpointed model holds one block's activations at a time (plus every
// block's input) instead of all of them. How much that lowers the peak
// depends on the blocks: a charlm's equal layers gain much; a CNN whose first
// block (the highest resolution) dominates gains only the others' share.
int64_t PeakRatioPercent(const TrainConfig& c, int64_t samples) {
  const Pass plain = ForwardBackward(c, false, Precision::kFp32, samples);
  const Pass checkpointed = ForwardBackward(c, true, Precision::kFp32, samples);
  return checkpointed.peak_bytes * 100 / plain.peak_bytes;
}

TEST(ActivationCheckpointMemory, HalvesTheCharLmPeak) {
  TrainConfig c = CharLm();
  c.model.d_model = 64;
  c.model.layers = 4;
  c.data.sequence_length = 64;
  c.data.min_sequence_length = 64;
  EXPECT_LT(PeakRatioPercent(c, 16), 50) << "checkpointed peak, % of plain";
}

TEST(ActivationCheckpointMemory, LowersTheCnnPeak) {
  TrainConfig c = Cnn();
  c.model.hidden = {8, 16, 32, 64};
  c.data.image_size = 32;
  EXPECT_LT(PeakRatioPercent(c, 32), 95) << "checkpointed peak, % of plain";
}

// The recomputation runs BatchNorm in training mode again; its running
// statistics must still move once per forward.
TEST(ActivationCheckpointBatchNorm, MovesTheRunningStatisticsOnce) {
  torch::manual_seed(1);
  const torch::Tensor input = torch::randn({8, 4});
  std::vector<torch::Tensor> means;
  std::vector<torch::Tensor> grads;
  for (bool checkpoint : {false, true}) {
    torch::manual_seed(2);
    torch::nn::BatchNorm1d norm(4);
    torch::nn::Linear linear(4, 4);
    const CheckpointBlock block{[n = norm.ptr(), l = linear.ptr()](const torch::Tensor& x) {
                                  return torch::relu(n->forward(l->forward(x)));
                                },
                                {norm.ptr(), linear.ptr()}};
    const torch::Tensor out = checkpoint ? Checkpoint(block, input) : block.forward(input);
    out.pow(2).sum().backward();
    means.push_back(norm->running_mean.clone());
    grads.push_back(linear->weight.grad().clone());
    EXPECT_EQ(norm->num_batches_tracked.item<int64_t>(), 1);
  }
  EXPECT_TRUE(torch::equal(means[0], means[1])) << means[0] << means[1];
  EXPECT_LE(MaxRelativeDifference({grads[1]}, {grads[0]}), 1e-6);
}

}  // namespace
}  // namespace accumulus::engine
