// Data-parallel jobs through the whole system: two worker daemons with one
// device slot each, a controller that gang-schedules, and the CLI.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>
#include <gtest/gtest.h>
#include <signal.h>

#include "accumulus/v1/controller.pb.h"
#include "tests/support/proto_json.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

std::string Spec(int devices, int epochs, int timeout_seconds = 20) {
  return R"(
model: {kind: mlp, hidden: [16]}
data: {samples: 200, features: 8, outputs: 3}
micro_batch: 4
accumulation_steps: 4
devices: )" +
         std::to_string(devices) + R"(
optimizer: {kind: sgd, lr: 0.1, momentum: 0.9}
epochs: )" +
         std::to_string(epochs) + R"(
collective_timeout_seconds: )" +
         std::to_string(timeout_seconds) + "\n";
}

class MultiWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.StartWorker(1);
    cluster_.StartWorker(1);
  }

  v1::Job Get(const std::string& id) {
    CliResult r = cluster_.Cli({"-o", "json", "get", id});
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    return r.lines.empty() ? v1::Job() : FromJson<v1::Job>(r.lines[0]);
  }

  std::string Submit(const std::string& yaml) {
    static int n = 0;
    CliResult r = cluster_.Cli(
        {"-o", "json", "submit", cluster_.WriteSpec("job" + std::to_string(++n) + ".yaml", yaml)});
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    return r.lines.empty() ? "" : FromJson<v1::Job>(r.lines[0]).id();
  }

  TestCluster cluster_;
};

TEST_F(MultiWorkerTest, TwoWorkersRunOneTwoDeviceJobTogether) {
  CliResult r =
      cluster_.Cli({"-o", "json", "submit", cluster_.WriteSpec("dp.yaml", Spec(2, 2)), "--watch"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const v1::Job submitted = FromJson<v1::Job>(r.lines.at(0));
  EXPECT_EQ(submitted.batch().global_batch(), 4 * 4 * 2);

  std::vector<v1::StepMetrics> steps;
  for (size_t i = 1; i < r.lines.size(); ++i) {
    const v1::JobEvent e = FromJson<v1::JobEvent>(r.lines[i]);
    if (e.has_step()) steps.push_back(e.step());
  }
  // ceil(200 / 32) = 7 steps per epoch, one merged event per step.
  ASSERT_EQ(steps.size(), 14u);
  for (const v1::StepMetrics& step : steps) {
    EXPECT_EQ(step.effective_batch(), 32);
    ASSERT_EQ(step.ranks_size(), 2);
    EXPECT_NE(step.ranks(0).worker_id(), step.ranks(1).worker_id()) << "one rank per worker";
    for (const auto& rank : step.ranks()) EXPECT_EQ(rank.allreduce_calls(), 2);
  }
  EXPECT_EQ(steps[6].samples(), 200 - 6 * 32) << "the short window's global count";
  EXPECT_LT(steps.back().loss(), steps.front().loss());

  const v1::Job job = Get(submitted.id());
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(job.placements_size(), 2);
}

TEST_F(MultiWorkerTest, AJobLargerThanThePoolSaysWhy) {
  const std::string id = Submit(Spec(3, 1));
  const v1::Job job = Get(id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_QUEUED);
  EXPECT_NE(job.reason().find("needs 3 device slots; the pool has"), std::string::npos)
      << job.reason();
}

TEST_F(MultiWorkerTest, TwoGangJobsRunOneAfterTheOther) {
  const std::string first = Submit(Spec(2, 2));
  const std::string second = Submit(Spec(2, 2));
  CliResult watch = cluster_.Cli({"watch", second});
  ASSERT_EQ(watch.exit_code, 0) << watch.stderr_text;
  const v1::Job a = Get(first);
  const v1::Job b = Get(second);
  EXPECT_EQ(a.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(b.state(), v1::JOB_STATE_SUCCEEDED);
  using google::protobuf::util::TimeUtil;
  EXPECT_GE(TimeUtil::TimestampToNanoseconds(b.started_at()),
            TimeUtil::TimestampToNanoseconds(a.finished_at()))
      << "the second job's ranks started only after the first job ended";
}

TEST_F(MultiWorkerTest, KillingOneRankFailsTheJobAndFreesBothWorkers) {
  const std::string id = Submit(Spec(2, 100000, /*timeout_seconds=*/10));
  std::unique_ptr<Subprocess> watch = cluster_.StartCli({"-o", "json", "watch", id});
  // Wait for a step (both ranks joined), then kill rank 1's trainer.
  int64_t rank1_pid = 0;
  std::string line;
  bool stepped = false;
  while ((rank1_pid == 0 || !stepped) && watch->ReadLine(&line)) {
    const v1::JobEvent e = FromJson<v1::JobEvent>(line);
    if (e.has_runtime() && e.runtime().rank() == 1) rank1_pid = e.runtime().pid();
    if (e.has_step()) stepped = true;
  }
  ASSERT_GT(rank1_pid, 0);
  ASSERT_EQ(kill(static_cast<pid_t>(rank1_pid), SIGKILL), 0);

  v1::JobEvent last;
  while (watch->ReadLine(&line)) {
    const v1::JobEvent e = FromJson<v1::JobEvent>(line);
    if (e.has_state()) last = e;
  }
  EXPECT_EQ(last.state().state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(last.state().reason().find("rank 1 on worker"), std::string::npos)
      << last.state().reason();
  EXPECT_NE(last.state().reason().find("killed by signal 9"), std::string::npos)
      << last.state().reason();

  // Both workers take the next job: their slots were freed.
  CliResult next = cluster_.Cli({"submit", cluster_.WriteSpec("next.yaml", Spec(2, 1)), "--watch"});
  EXPECT_EQ(next.exit_code, 0) << next.stderr_text;
}

}  // namespace
}  // namespace accumulus::testing
