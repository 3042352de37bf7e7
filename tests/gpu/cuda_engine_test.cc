// The engine on a real GPU. Every test here skips (ctest reports it skipped,
// never passed) where LibTorch sees no CUDA device; scripts/gpu-check.sh runs
// them on a machine that has one.
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <thread>

#include "tests/gpu/gpu_test_support.h"
#include "tests/support/engine_test_support.h"
#include "tests/support/free_port.h"
#include "worker/engine/dataset.h"
#include "worker/engine/device_probe.h"
#include "worker/engine/mlp.h"
#include "worker/engine/phase_clock.h"
#include "worker/engine/process_group_sync.h"
#include "worker/engine/window_accumulator.h"

#define REQUIRE_CUDA_DEVICES(n)                                            \
  do {                                                                     \
    if (static_cast<int>(torch::cuda::device_count()) < (n)) {             \
      GTEST_SKIP() << "needs " << (n) << " CUDA device(s), LibTorch sees " \
                   << static_cast<int>(torch::cuda::device_count());       \
    }                                                                      \
  } while (0)

namespace accumulus::engine {
namespace {

using testing::MaxRelativeDifference;
using testing::RecordingSink;
using testing::SmallMlp;
using testing::TrainAndCollect;
namespace F = torch::nn::functional;

const torch::Device kGpu(torch::kCUDA, 0);

std::vector<torch::Tensor> Gradients(torch::nn::Module& module) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : module.parameters()) grads.push_back(p.grad().detach().cpu().clone());
  return grads;
}

TEST(CudaGradientEquivalence, FourMicroBatchesGiveTheGradientOfOneBatchInFp32) {
  REQUIRE_CUDA_DEVICES(1);
  torch::manual_seed(1);
  Mlp model(20, std::vector<int64_t>{64, 64}, 5);
  model->to(kGpu);
  const torch::Tensor x = torch::randn({96, 20}).to(kGpu);
  const torch::Tensor y = torch::randint(0, 5, {96}).to(kGpu);

  F::cross_entropy(model(x), y).backward();
  const std::vector<torch::Tensor> expected = Gradients(*model);
  model->zero_grad(/*set_to_none=*/true);

  WindowAccumulator window(
      model->parameters(), [&](const torch::Tensor& in) { return model(in); },
      LossKind::kCrossEntropy, Normalization::kExact, /*nominal_microbatches=*/4,
      /*max_grad_norm=*/0);
  // Three full micro-batches and a short one: the count, not k, divides.
  for (int64_t b = 0; b < 96; b += 28) {
    const int64_t e = std::min<int64_t>(96, b + 28);
    window.AddMicroBatch({x.slice(0, b, e), y.slice(0, b, e)});
  }
  const WindowResult result = window.FinishWindow();
  EXPECT_EQ(result.loss_items, 96);
  EXPECT_LE(MaxRelativeDifference(Gradients(*model), expected), 1e-6);
}

// Inside a window the host never waits for the GPU: micro-batches go over
// from pinned memory, the loss and the item counts stay on the device. CUDA's
// sync debug mode turns any synchronizing call into an error; the window's
// end (which reads the counts once) runs outside it.
TEST(CudaWindow, TheHostNeverWaitsForTheGpuInsideAWindow) {
  REQUIRE_CUDA_DEVICES(1);
  torch::manual_seed(2);
  Mlp model(20, std::vector<int64_t>{64}, 5);
  model->to(kGpu);
  const torch::Tensor x = torch::randn({128, 20});  // on the host, as a data set is
  const torch::Tensor y = torch::randint(0, 5, {128});
  WindowAccumulator window(
      model->parameters(), [&](const torch::Tensor& in) { return model(in); },
      LossKind::kCrossEntropy, Normalization::kExact, /*nominal_microbatches=*/4,
      /*max_grad_norm=*/1.0);
  // Timed as a trainer times it: CUDA events, recorded without a wait; and
  // the gradient noise measured, as a trainer measures it (the first
  // micro-batch's squared norm stays on the device).
  const std::unique_ptr<PhaseClock> clock = MakePhaseClock(kGpu);
  window.set_phase_clock(clock.get());
  window.set_measure_noise(true);
  auto add_micro_batches = [&] {
    for (int64_t b = 0; b < 128; b += 32) {
      window.AddMicroBatch(ToDevice({x.slice(0, b, b + 32), y.slice(0, b, b + 32)}, kGpu));
    }
  };
  add_micro_batches();  // first window: cuBLAS handles, allocator blocks
  window.FinishWindow();
  clock->TakeWindow();

  EXPECT_EQ(testing::SyncErrorIn(add_micro_batches), "")
      << "a synchronizing call inside the window";
  const WindowResult result = window.FinishWindow();
  EXPECT_EQ(result.loss_items, 128);
  EXPECT_EQ(result.microbatches, 4);
  EXPECT_TRUE(result.noise_measured);
  EXPECT_EQ(result.noise.small_batch, 32);
  EXPECT_EQ(result.noise.big_batch, 128);
  const PhaseTimes phases = clock->TakeWindow();
  EXPECT_GT(phases.forward_seconds, 0);
  EXPECT_GT(phases.backward_seconds, 0);
}

// A job's steps on the GPU say where their time went, by CUDA events: every
// phase took some, together no more than the step.
TEST(CudaWindow, TheStepsPhasesAreTheGpusTimeWithinTheStep) {
  REQUIRE_CUDA_DEVICES(1);
  RecordingSink sink;
  TrainAndCollect(SmallMlp("cuda:0"), &sink);
  ASSERT_FALSE(sink.steps.empty());
  for (const StepReport& s : sink.steps) {
    EXPECT_GT(s.forward_seconds, 0) << "step " << s.step;
    EXPECT_GT(s.backward_seconds, 0) << "step " << s.step;
    EXPECT_GT(s.optimizer_seconds, 0) << "step " << s.step;
    EXPECT_LE(s.forward_seconds + s.backward_seconds + s.optimizer_seconds, s.step_seconds)
        << "step " << s.step;
  }
}

TEST(CudaGradientEquivalence, AJobOnTheGpuEndsWhereTheSameJobOnTheCpuEnds) {
  REQUIRE_CUDA_DEVICES(1);
  RecordingSink cpu_sink, gpu_sink;
  const auto on_cpu = TrainAndCollect(SmallMlp("cpu"), &cpu_sink);
  const auto on_gpu = TrainAndCollect(SmallMlp("cuda:0"), &gpu_sink);
  ASSERT_EQ(gpu_sink.steps.size(), 4u);
  EXPECT_EQ(gpu_sink.run.device, "cuda:0");
  std::vector<torch::Tensor> gpu_on_host;
  for (const auto& p : on_gpu) gpu_on_host.push_back(p.cpu());
  EXPECT_LE(MaxRelativeDifference(gpu_on_host, on_cpu), 1e-5);
  // The gradient noise scale is measured from the same windows on both.
  ASSERT_EQ(cpu_sink.steps.size(), gpu_sink.steps.size());
  for (size_t i = 0; i < gpu_sink.steps.size(); ++i) {
    const NoiseReport& cpu = cpu_sink.steps[i].noise;
    const NoiseReport& gpu = gpu_sink.steps[i].noise;
    ASSERT_EQ(gpu.measured, cpu.measured) << "step " << i + 1;
    if (!gpu.measured) continue;
    EXPECT_NEAR(gpu.sample.small_sq_norm, cpu.sample.small_sq_norm,
                1e-5 * cpu.sample.small_sq_norm);
    EXPECT_NEAR(gpu.sample.big_sq_norm, cpu.sample.big_sq_norm, 1e-5 * cpu.sample.big_sq_norm);
  }
}

TEST(CudaMixedPrecision, Bf16AutocastTrainsCloseToFp32WithFp32MasterWeights) {
  REQUIRE_CUDA_DEVICES(1);
  TrainConfig bf16 = SmallMlp("cuda:0");
  bf16.precision = Precision::kBf16;
  RecordingSink a, b;
  const auto fp32 = TrainAndCollect(SmallMlp("cuda:0"), &a);
  const auto mixed = TrainAndCollect(bf16, &b);
  ASSERT_EQ(mixed.size(), fp32.size());
  const double difference = MaxRelativeDifference(mixed, fp32);
  EXPECT_GT(difference, 0) << "autocast changed nothing: was it on?";
  EXPECT_LT(difference, 0.05);
  EXPECT_EQ(mixed[0].scalar_type(), torch::kFloat32);
}

// A real fp16 overflow: a scale of 2^40 turns the gradient of the outputs
// into inf in the fp16 backward. The step is skipped, the scale backs off
// (to 2^10 here), and the skipped step does not advance the LR schedule.
TEST(CudaMixedPrecision, Fp16OverflowSkipsTheStepBacksOffAndHoldsTheSchedule) {
  REQUIRE_CUDA_DEVICES(1);
  TrainConfig c = SmallMlp("cuda:0");
  c.precision = Precision::kFp16;
  c.loss_scaling = true;
  c.loss_scaler = {std::ldexp(1.0, 40), 2, std::ldexp(1.0, -30), 1000};
  RecordingSink sink;
  const auto parameters = TrainAndCollect(c, &sink);
  ASSERT_EQ(sink.steps.size(), 4u);
  EXPECT_TRUE(sink.steps[0].skipped);
  EXPECT_EQ(sink.steps[0].loss_scale, std::ldexp(1.0, 40));
  for (size_t i = 1; i < sink.steps.size(); ++i) {
    EXPECT_FALSE(sink.steps[i].skipped) << "step " << i + 1;
    EXPECT_EQ(sink.steps[i].loss_scale, 1024.0) << "step " << i + 1;
    EXPECT_EQ(sink.steps[i].skipped_steps, 1);
  }
  EXPECT_EQ(sink.steps[1].lr, sink.steps[0].lr) << "the skipped step held the schedule";
  EXPECT_LT(sink.steps[2].lr, sink.steps[1].lr);
  for (const auto& p : parameters) EXPECT_TRUE(torch::isfinite(p).all().item<bool>());

  // Without the overflow, fp16 lands near fp32.
  RecordingSink reference;
  const auto fp32 = TrainAndCollect(SmallMlp("cuda:0"), &reference);
  TrainConfig sane = c;
  sane.loss_scaler = {1024, 2, 0.5, 1000};
  RecordingSink fp16_sink;
  EXPECT_LT(MaxRelativeDifference(TrainAndCollect(sane, &fp16_sink), fp32), 0.05);
}

// The caching allocator's peak, reset at each window start, follows the
// micro-batch: k accumulated micro-batches peak like one, far below the big
// batch they add up to.
int64_t CudaWindowPeak(int64_t micro, int64_t accumulation) {
  TrainConfig c;
  c.model.kind = ModelKind::kCnn;
  c.model.hidden = {32, 64};
  c.data.task = DataTask::kImageClassification;
  c.data.channels = 3;
  c.data.image_size = 32;
  c.data.outputs = 10;
  c.data.samples = 2 * 16 * 8;
  c.optimizer.kind = OptimizerKind::kSgd;
  c.optimizer.lr = 0.01;
  c.optimizer.momentum = 0.9;
  c.micro_batch = micro;
  c.accumulation_steps = accumulation;
  c.global_batch = micro * accumulation;
  c.max_steps = 2;  // the second window: optimizer state in place
  c.device = "cuda:0";
  RecordingSink sink;
  TrainAndCollect(c, &sink);
  EXPECT_GT(sink.steps.back().allocator_reserved_bytes, 0);
  EXPECT_GE(sink.steps.back().allocator_reserved_bytes, sink.steps.back().tensor_bytes);
  return sink.steps.back().tensor_peak_bytes;
}

TEST(CudaMemory, TheWindowPeakFollowsTheMicroBatchNotTheWindow) {
  REQUIRE_CUDA_DEVICES(1);
  const int64_t small_accumulated = CudaWindowPeak(16, 8);
  const int64_t small_alone = CudaWindowPeak(16, 1);
  const int64_t large_alone = CudaWindowPeak(128, 1);
  EXPECT_LE(small_accumulated, small_alone * 11 / 10) << "within 10% of one micro-batch";
  EXPECT_LT(small_accumulated, large_alone * 6 / 10) << "clearly below one big batch";
}

// A wide MLP whose activations at micro-batch 8192 are ~256 MiB above those
// at 4096: room for the allocator's rounding when the cap falls in between.
TrainConfig WideMlpOnGpu() {
  TrainConfig c;
  c.model.hidden = {4096, 4096};
  c.data.samples = 32768;
  c.data.features = 1024;
  c.data.outputs = 10;
  c.data.seed = 2;
  c.optimizer.kind = OptimizerKind::kSgd;
  c.optimizer.lr = 0.01;
  c.optimizer.momentum = 0.9;
  c.micro_batch = 8192;
  c.accumulation_steps = 2;
  c.epochs = 2;  // 4 steps
  c.seed = 4;
  c.device = "cuda:0";
  // Eager: a graph's replays allocate nothing, so a cap set after its
  // capture could not make them run out (cuda_graph_test.cc has graphs).
  c.cuda_graphs = false;
  return c;
}

// A real CUDA out-of-memory in the middle of a job: after step 3 the caching
// allocator is capped between the peaks of micro-batch 4096 and 8192, so
// step 4 fails inside its window, runs again as 4096 × 4, and the job ends
// on the trajectory of the uncapped run.
TEST(CudaOutOfMemory, AWindowThatRunsOutIsRetriedAtHalfTheMicroBatchOnTheSameTrajectory) {
  REQUIRE_CUDA_DEVICES(1);
  RecordingSink plain;
  const auto reference = TrainAndCollect(WideMlpOnGpu(), &plain);
  TrainConfig halved = WideMlpOnGpu();
  halved.micro_batch = 4096;
  halved.accumulation_steps = 4;
  RecordingSink at_half;
  TrainAndCollect(halved, &at_half);
  const int64_t peak_full = plain.steps.at(1).tensor_peak_bytes;
  const int64_t peak_half = at_half.steps.at(1).tensor_peak_bytes;
  ASSERT_GT(peak_full - peak_half, int64_t{128} << 20);

  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  const double cap = static_cast<double>(peak_half + (peak_full - peak_half) / 2) /
                     static_cast<double>(total_bytes);
  RecordingSink sink;
  TrainOptions options;
  options.after_backward = [cap](int64_t step, const std::vector<torch::Tensor>&) {
    if (step == 3) {
      c10::cuda::CUDACachingAllocator::emptyCache();
      c10::cuda::CUDACachingAllocator::setMemoryFraction(cap, 0);
    }
  };
  const auto recovered = TrainAndCollect(WideMlpOnGpu(), &sink, options);
  c10::cuda::CUDACachingAllocator::setMemoryFraction(1.0, 0);
  ASSERT_EQ(sink.steps.size(), 4u);
  EXPECT_EQ(sink.steps[2].microbatches, 2);
  EXPECT_EQ(sink.steps[3].microbatches, 4) << "step 4 ran as 4096 × 4";
  ASSERT_EQ(sink.split_changes.size(), 1u) << "the controller is told, once";
  EXPECT_EQ(sink.split_changes[0].step, 4);
  EXPECT_EQ(sink.split_changes[0].micro_batch, 4096);
  EXPECT_EQ(sink.split_changes[0].accumulation_steps, 4);
  EXPECT_EQ(sink.split_changes[0].reason, "out of memory in step 4 at micro_batch 8192");
  EXPECT_LE(MaxRelativeDifference(recovered, reference), 1e-5);
}

TEST(CudaDeviceProbe, ReportsEveryGpuWithItsModelAndMemory) {
  REQUIRE_CUDA_DEVICES(1);
  const std::vector<CudaDevice> devices = ProbeCudaDevices();
  ASSERT_EQ(devices.size(), torch::cuda::device_count());
  for (const CudaDevice& d : devices) {
    ASSERT_EQ(cudaSetDevice(d.index), cudaSuccess);
    size_t free_bytes = 0, total_bytes = 0;
    ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
    // Two views of one number (the device's properties and the driver's
    // count); 1% leaves room for a driver that reserves some of it.
    EXPECT_NEAR(static_cast<double>(d.memory_bytes), static_cast<double>(total_bytes),
                0.01 * static_cast<double>(total_bytes))
        << d.name;
    EXPECT_GT(d.memory_bytes, int64_t{1} << 30) << d.name;
    EXPECT_FALSE(d.name.empty());
    EXPECT_EQ(d.name.rfind("cuda:", 0), std::string::npos) << "the model, not the device string";
  }
}

// Two ranks, one per GPU, in two threads of this process: after one
// all-reduce both hold the sum of their gradients and of their counters.
TEST(CudaNccl, TwoRanksSumTheirGradientsAndCounters) {
  REQUIRE_CUDA_DEVICES(2);
  const int port = testing::FreeLoopbackPort();
  std::vector<torch::Tensor> results(2);
  std::vector<double> items(2);
  auto rank = [&](int r) {
    ProcessGroupConfig config;
    config.rank = r;
    config.world_size = 2;
    config.rendezvous_host = "127.0.0.1";
    config.rendezvous_port = port;
    config.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(r));
    config.timeout = std::chrono::milliseconds(60000);
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(r));
    StatusOr<std::unique_ptr<GradientSync>> sync = ConnectProcessGroup(config);
    ASSERT_TRUE(sync.ok()) << sync.status().ToString();
    torch::Tensor p = torch::zeros({1000}, torch::TensorOptions(config.device).requires_grad(true));
    p.mutable_grad() = torch::full({1000}, static_cast<float>(r + 1), config.device);
    torch::Tensor counters = torch::tensor({0.0, 10.0 * (r + 1)}, torch::kFloat64);
    SyncStats stats;
    (*sync)->AllReduce({p}, counters, &stats);
    results[r] = p.grad().cpu();
    items[r] = counters[1].item<double>();
  };
  std::thread first(rank, 0), second(rank, 1);
  first.join();
  second.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(torch::equal(results[r], torch::full({1000}, 3.0f))) << "rank " << r;
    EXPECT_EQ(items[r], 30.0) << "rank " << r;
  }
}

}  // namespace
}  // namespace accumulus::engine
