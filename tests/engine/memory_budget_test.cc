// A memory budget per device: enforced on the CPU like a CUDA out-of-memory,
// micro_batch: auto measured against it, and a window that runs out retried
// with a smaller split without changing the trajectory.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

#include "tests/support/engine_test_support.h"
#include "worker/engine/cpu_rng.h"
#include "worker/engine/micro_batch_probe.h"
#include "worker/engine/tracking_allocator.h"
#include "worker/engine/trainer.h"

namespace accumulus::engine {
namespace {

using Sink = testing::RecordingSink;
using testing::TrainAndCollect;

// Activations dominate: wide hidden layers, few parameters per sample.
TrainConfig WideMlp() {
  TrainConfig c;
  c.model.hidden = {1024, 1024};
  c.data.samples = 256;
  c.data.features = 16;
  c.data.outputs = 4;
  c.data.seed = 2;
  c.optimizer.lr = 0.05;
  c.optimizer.momentum = 0.9;
  c.global_batch = 64;
  c.epochs = 1;  // 4 steps
  c.seed = 6;
  return c;
}

// Activations dominate: convolutions over 16×16 images, few parameters
// (with the MLP above, the accumulated gradients would).
TrainConfig SmallCnn() {
  TrainConfig c = WideMlp();
  c.model.kind = ModelKind::kCnn;
  c.model.hidden = {16, 32};
  c.model.batch_norm = false;
  c.data.task = DataTask::kImageClassification;
  c.data.channels = 3;
  c.data.image_size = 16;
  return c;
}

using testing::MaxRelativeDifference;

TEST(MemoryBudget, AnAllocationBeyondItFailsLikeACudaOutOfMemory) {
  TrackingCpuAllocator* memory = TrackingCpuAllocator::Install();
  const int64_t before = memory->current_bytes();
  memory->set_limit_bytes(before + 1024 * 1024);
  EXPECT_THROW(torch::empty({1024, 1024}, torch::kFloat32), c10::OutOfMemoryError);
  EXPECT_EQ(memory->current_bytes(), before) << "nothing was taken";
  EXPECT_NO_THROW(torch::empty({256}, torch::kFloat32));
  memory->set_limit_bytes(0);
}

// The model and data Train builds for `c`, and a micro_batch: auto probe of
// a window of 64 on them with a budget nothing fits, so every candidate runs
// forward + backward.
struct ProbeSetup {
  explicit ProbeSetup(const TrainConfig& c)
      // The meter first, as in Train: the data and the model count too.
      : memory(*MakeMemoryMeter(torch::kCPU)), data(*MakeDataset(c.data)) {
    torch::manual_seed(c.seed);
    model = *BuildModel(c.model, data->shape(), LossOf(c.model.loss, c.data.task));
    request.model = model.get();
    request.loss = LossOf(c.model.loss, c.data.task);
    request.data = data.get();
    request.memory = memory.get();
    request.per_rank_batch = 64;
    request.optimizer_state_bytes = OptimizerStateBytes(c.optimizer, model->Parameters());
    request.budget_bytes = 1;
  }
  std::unique_ptr<MemoryMeter> memory;
  std::unique_ptr<Dataset> data;
  std::unique_ptr<Model> model;
  ProbeRequest request;
};

// What micro_batch: auto measures for each candidate of a window of 64
// (with the model and data freed before Train runs).
std::map<int64_t, int64_t> ProbedPeaks(const TrainConfig& c) {
  ProbeSetup setup(c);
  std::map<int64_t, int64_t> peaks;
  for (const MicroBatchProbe& p : ProbeMicroBatch(setup.request).table)
    peaks[p.micro_batch] = p.peak_bytes;
  return peaks;
}

TEST(AutoMicroBatch, PicksTheLargestThatFitsAndTrainsLikeThatSplitGivenExplicitly) {
  const std::map<int64_t, int64_t> peaks = ProbedPeaks(SmallCnn());
  const int64_t peak16 = peaks.at(16);
  const int64_t peak32 = peaks.at(32);
  ASSERT_LT(peak16, peak32);
  TrainConfig automatic = SmallCnn();
  automatic.auto_micro_batch = true;
  // Fits 16, not 32, with the 10% margin.
  automatic.memory_limit_bytes = static_cast<int64_t>((peak16 + peak32) / 2 / 0.9);
  Sink a;
  const auto pa = TrainAndCollect(automatic, &a);
  EXPECT_EQ(a.run.micro_batch, 16);
  EXPECT_EQ(a.run.accumulation_steps, 4);
  ASSERT_EQ(a.run.probe.size(), 3u);  // 64 and 32 do not fit, 16 does
  EXPECT_EQ(a.run.probe[0].micro_batch, 64);
  EXPECT_FALSE(a.run.probe[1].fits);
  EXPECT_TRUE(a.run.probe[2].fits);

  TrainConfig explicit_split = SmallCnn();
  explicit_split.micro_batch = 16;
  explicit_split.accumulation_steps = 4;
  Sink b;
  const auto pb = TrainAndCollect(explicit_split, &b);
  EXPECT_LE(MaxRelativeDifference(pa, pb), 1e-6);
}

TEST(AutoMicroBatch, TheProbeLeavesBatchNormStatisticsAndTheGeneratorAsItFoundThem) {
  TrainConfig c = SmallCnn();
  c.model.batch_norm = true;
  ProbeSetup setup(c);
  Model* model = setup.model.get();
  std::vector<torch::Tensor> buffers_before;
  for (const auto& b : model->Buffers()) buffers_before.push_back(b.clone());
  ASSERT_FALSE(buffers_before.empty());
  const torch::Tensor next_draw = [] {  // peek, then rewind
    const torch::Tensor state = CpuRngState();
    torch::Tensor draw = torch::rand({4});
    RestoreCpuRng(state);
    return draw;
  }();

  ASSERT_EQ(ProbeMicroBatch(setup.request).table.size(), 7u);  // 64, 32, ..., 1

  const std::vector<torch::Tensor> buffers_after = model->Buffers();
  ASSERT_EQ(buffers_after.size(), buffers_before.size());
  for (size_t i = 0; i < buffers_after.size(); ++i) {
    EXPECT_TRUE(torch::equal(buffers_after[i], buffers_before[i])) << "buffer " << i;
  }
  EXPECT_TRUE(torch::equal(torch::rand({4}), next_draw));
  for (const auto& p : model->Parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(AutoMicroBatch, FailsClearlyWhenNotEvenOneSampleFits) {
  TrainConfig c = WideMlp();
  c.auto_micro_batch = true;
  c.memory_limit_bytes = 1;
  Sink sink;
  const Status status = Train(c, &sink);
  // Even the data set does not fit a 1-byte budget: a clear out-of-memory.
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("out of memory"), std::string::npos) << status.message();
}

TEST(OutOfMemory, AModelBeyondTheBudgetFailsAsOutOfMemoryForGood) {
  TrainConfig c = WideMlp();
  c.micro_batch = 32;
  c.accumulation_steps = 2;
  c.memory_limit_bytes = 1;
  Sink sink;
  const Status status = Train(c, &sink);
  ASSERT_FALSE(status.ok());
  // Not an internal LibTorch error: the out-of-memory class, with the budget
  // and where it comes from, so that the user knows what to change.
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_EQ(status.fault(), Fault::kMemory) << status.ToString();
  EXPECT_NE(status.message().find("the budget, 1 bytes, is the spec's memory_limit_bytes"),
            std::string::npos)
      << status.message();
  EXPECT_TRUE(sink.steps.empty());
}

TEST(OutOfMemory, AWindowThatRunsOutIsRetriedSmallerOnTheSameTrajectory) {
  TrainConfig c = WideMlp();
  c.micro_batch = 32;
  c.accumulation_steps = 2;
  Sink plain;
  const auto reference = TrainAndCollect(c, &plain);

  // After step 3's backward, cap memory just below step 2's peak: step 4
  // cannot run at micro-batch 32 but can at 16.
  Sink sink;
  TrainOptions options;
  options.after_backward = [&sink](int64_t step, const std::vector<torch::Tensor>&) {
    if (step == 3) {
      TrackingCpuAllocator::Install()->set_limit_bytes(sink.steps.at(1).tensor_peak_bytes - 1);
    }
  };
  const auto recovered = TrainAndCollect(c, &sink, options);
  ASSERT_EQ(sink.steps.size(), 4u);
  EXPECT_EQ(sink.steps[2].microbatches, 2);
  EXPECT_EQ(sink.steps[3].microbatches, 4) << "step 4 ran as 16 × 4";
  ASSERT_EQ(sink.split_changes.size(), 1u) << "the controller is told, once";
  EXPECT_EQ(sink.split_changes[0].step, 4);
  EXPECT_EQ(sink.split_changes[0].micro_batch, 16);
  EXPECT_EQ(sink.split_changes[0].accumulation_steps, 4);
  EXPECT_EQ(sink.split_changes[0].reason, "out of memory in step 4 at micro_batch 32");
  EXPECT_LE(MaxRelativeDifference(recovered, reference), 1e-5);
}

TEST(OutOfMemory, AThreadSplitTrialThatRunsOutLeavesTheRetryToTheFirstWindow) {
  const std::map<int64_t, int64_t> peaks = ProbedPeaks(SmallCnn());
  TrainConfig c = SmallCnn();
  c.micro_batch = 32;
  c.accumulation_steps = 2;
  c.measure_thread_split_cores = 2;
  // Fits 16, not 32.
  c.memory_limit_bytes = peaks.at(16) + (peaks.at(32) - peaks.at(16)) / 4;
  Sink sink;
  TrainAndCollect(c, &sink);
  EXPECT_TRUE(sink.run.thread_trials.empty());
  ASSERT_FALSE(sink.logs.empty());
  EXPECT_NE(sink.logs[0].find("thread split not measured: micro_batch 32 ran out of memory"),
            std::string::npos)
      << sink.logs[0];
  ASSERT_EQ(sink.steps.size(), 4u);
  EXPECT_EQ(sink.steps[0].microbatches, 4) << "step 1 ran as 16 × 4";
}

// What accumulation is for: the window's peak follows the micro-batch, not
// the window. Measured where activations dominate: the CNN, and an MLP whose
// micro-batch is large against its width (a wide MLP's gradients would
// dominate instead: bench/README.md).
int64_t WindowPeak(TrainConfig c, int64_t micro, int64_t accumulation) {
  c.global_batch = micro * accumulation;
  c.micro_batch = micro;
  c.accumulation_steps = accumulation;
  c.max_steps = 2;  // the second window: optimizer state in place
  Sink sink;
  TrainAndCollect(c, &sink);
  EXPECT_GT(sink.steps.back().process_rss_bytes, sink.steps.back().tensor_bytes);
  return sink.steps.back().tensor_peak_bytes;
}

TrainConfig NarrowMlp() {
  TrainConfig c = WideMlp();
  c.model.hidden = {64, 64};
  return c;
}

void ExpectPeakFollowsTheMicroBatch(TrainConfig c, int64_t micro, int64_t k) {
  c.data.samples = 2 * micro * k;  // the same data set (counted in the peak) for all three
  const int64_t small_accumulated = WindowPeak(c, micro, k);
  const int64_t small_alone = WindowPeak(c, micro, 1);
  const int64_t large_alone = WindowPeak(c, micro * k, 1);
  EXPECT_LE(small_accumulated, small_alone * 11 / 10) << "within 10% of one micro-batch";
  EXPECT_LT(small_accumulated, large_alone * 6 / 10) << "clearly below one big batch";
}

TEST(WindowPeak, FollowsTheMicroBatchNotTheWindowOnTheCnn) {
  ExpectPeakFollowsTheMicroBatch(SmallCnn(), 8, 8);
}

TEST(WindowPeak, FollowsTheMicroBatchNotTheWindowOnTheMlp) {
  ExpectPeakFollowsTheMicroBatch(NarrowMlp(), 512, 8);
}

}  // namespace
}  // namespace accumulus::engine
