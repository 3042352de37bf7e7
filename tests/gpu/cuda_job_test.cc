// A whole job on a GPU: the real controller, a worker that registers only its
// GPUs, and the trainer on cuda:0 with CUDA graphs, driven through the CLI. Skips where
// LibTorch sees no CUDA device.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <chrono>

#include "accumulus/v1/controller.pb.h"
#include "tests/support/proto_json.h"
#include "tests/support/test_cluster.h"
#include "worker/engine/device_probe.h"

namespace accumulus::testing {
namespace {

constexpr char kGpuJob[] = R"(
name: e2e-cuda
model: {kind: mlp, hidden: [256, 256]}
data: {kind: synthetic, task: classification, samples: 4096, features: 64, outputs: 10}
micro_batch: 64
accumulation_steps: 4
optimizer: {kind: adamw, lr: 0.001}
precision: bf16
cuda_graphs: on
epochs: 1
seed: 3
)";

TEST(CudaJob, RunsOnTheGpuAndReportsItsCudaMemory) {
  const std::vector<engine::CudaDevice> gpus = engine::ProbeCudaDevices();
  if (gpus.empty()) GTEST_SKIP() << "no CUDA device visible";
  TestCluster cluster;
  const std::string worker = cluster.StartWorker(/*cpu_slots=*/0);
  // The worker probes its GPUs (a CUDA context: about a second) before it
  // registers.
  ASSERT_TRUE(cluster.WaitForWorkers({worker},
                                     std::chrono::steady_clock::now() + std::chrono::seconds(60)));

  CliResult workers = cluster.Cli({"-o", "json", "workers"});
  ASSERT_EQ(workers.exit_code, 0) << workers.stderr_text;
  const auto listed = FromJson<v1::ListWorkersResponse>(workers.lines.at(0));
  ASSERT_EQ(listed.workers_size(), 1);
  ASSERT_EQ(listed.workers(0).devices_size(), static_cast<int>(gpus.size()));
  EXPECT_EQ(listed.workers(0).devices(0).kind(), v1::DEVICE_KIND_CUDA);
  EXPECT_EQ(listed.workers(0).devices(0).name(), gpus[0].name);
  EXPECT_EQ(listed.workers(0).devices(0).memory_bytes(), gpus[0].memory_bytes);

  CliResult r =
      cluster.Cli({"-o", "json", "submit", cluster.WriteSpec("cuda.yaml", kGpuJob), "--watch"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  std::vector<v1::StepMetrics> steps;
  v1::RuntimeInfo runtime;
  v1::JobEvent last_state;
  bool replayed = false;
  for (size_t i = 1; i < r.lines.size(); ++i) {
    const v1::JobEvent event = FromJson<v1::JobEvent>(r.lines[i]);
    if (event.has_step()) steps.push_back(event.step());
    if (event.has_log() &&
        event.log().text().find("now run as CUDA graph replays") != std::string::npos) {
      replayed = true;
    }
    if (event.has_runtime()) runtime = event.runtime();
    if (event.has_state()) last_state = event;
  }
  EXPECT_EQ(last_state.state().state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(runtime.device(), "cuda:0");
  ASSERT_EQ(steps.size(), 4096u / 256u);
  for (const v1::StepMetrics& s : steps) {
    EXPECT_GT(s.tensor_peak_bytes(), 0) << "step " << s.step();
    EXPECT_GE(s.allocator_reserved_bytes(), s.tensor_bytes()) << "step " << s.step();
    EXPECT_GT(s.allocator_reserved_bytes(), 0) << "step " << s.step();
  }
  EXPECT_LT(steps.back().loss(), steps.front().loss());
  EXPECT_TRUE(replayed) << "cuda_graphs: on reached the trainer, which says when replays start";
}

}  // namespace
}  // namespace accumulus::testing
