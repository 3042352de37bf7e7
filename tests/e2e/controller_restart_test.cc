// The controller killed with SIGKILL while a job runs and started again on
// its state: the job keeps running and finishes, and a watcher that stayed
// connected throughout (it reconnects by itself) sees every step once.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "accumulus/v1/controller.pb.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

template <typename Message>
Message Parse(const std::string& line) {
  Message m;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &m).ok()) << line;
  return m;
}

TEST(ControllerRestart, AJobRunsThroughItAndAWatcherSeesEveryStepOnce) {
  TestCluster cluster;
  cluster.StartWorker(1);
  CliResult submitted = cluster.Cli({"-o", "json", "submit", cluster.WriteSpec("long.yaml", R"(
model: {kind: mlp, hidden: [32]}
data: {samples: 1600, features: 8, outputs: 3}
micro_batch: 4
accumulation_steps: 4
optimizer: {kind: sgd, lr: 0.05, momentum: 0.9}
epochs: 10
threads: {intra_op: 1, blas: 1}
)")});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.stderr_text;
  const std::string id = Parse<v1::Job>(submitted.lines.at(0)).id();

  std::string watch_stderr;
  std::unique_ptr<Subprocess> watch = cluster.StartCli({"-o", "json", "watch", id}, &watch_stderr);
  std::vector<int64_t> steps;
  bool restarted = false;
  std::string line;
  while (watch->ReadLine(&line)) {
    const v1::JobEvent e = Parse<v1::JobEvent>(line);
    if (!e.has_step()) continue;
    steps.push_back(e.step().step());
    if (!restarted && e.step().step() >= 50) {
      cluster.RestartController();  // kill -9, then start on the same state
      restarted = true;
    }
  }
  EXPECT_EQ(watch->Wait().exit_code, 0) << "the job succeeded";
  ASSERT_TRUE(restarted);

  CliResult got = cluster.Cli({"-o", "json", "get", id});
  ASSERT_EQ(got.exit_code, 0) << got.stderr_text;
  const v1::Job job = Parse<v1::Job>(got.lines.at(0));
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
  EXPECT_EQ(job.attempt(), 1) << "the job was never restarted";
  ASSERT_EQ(static_cast<int64_t>(steps.size()), job.steps_total());
  for (size_t i = 0; i < steps.size(); ++i) {
    ASSERT_EQ(steps[i], static_cast<int64_t>(i) + 1) << "every step once, in order";
  }
  std::ifstream in(watch_stderr);
  std::stringstream err;
  err << in.rdbuf();
  EXPECT_NE(err.str().find("reconnecting after event"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace accumulus::testing
