// A CPU slot's memory is its jobs' budget, end to end: a job whose model
// does not fit the slot the worker offers fails at once, for good and as out
// of memory, naming the budget — instead of allocating past it until the
// kernel's OOM killer ends the trainer (or something else on the node) and
// the job is retried into the same wall.
#include <gtest/gtest.h>

#include <string>

#include "accumulus/v1/controller.pb.h"
#include "tests/support/job_specs.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

TEST(SlotMemory, AModelBeyondItsSlotsMemoryFailsAsOutOfMemoryWithoutRetries) {
  TestCluster cluster;
  // A millionth of the machine's memory: a few KiB to a few MiB, below the
  // 16 MiB of the model's parameters on any machine.
  cluster.StartWorker(1, {"--cpu-memory-fraction", "0.000001"});
  const std::string id = SubmitJob(
      cluster, "too-big.yaml", TinyJob("{kind: mlp, hidden: [2048, 2048]}", "max_restarts: 2\n"));
  cluster.Cli({"watch", id});  // exits when the job ends, whichever way
  const v1::Job job = GetJob(cluster, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED) << job.reason();
  EXPECT_EQ(job.failure_class(), v1::FAILURE_CLASS_OUT_OF_MEMORY) << job.reason();
  EXPECT_EQ(job.attempt(), 1) << "the same slot cannot fit it on a retry: " << job.reason();
  EXPECT_EQ(job.steps_done(), 0);
  EXPECT_NE(job.reason().find("is the spec's memory_limit_bytes, or else the device slot's memory"),
            std::string::npos)
      << job.reason();
}

}  // namespace
}  // namespace accumulus::testing
