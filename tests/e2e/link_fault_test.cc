// The network between a worker and the controller fails while a job trains:
// the worker's link is reset (through a TCP relay that cuts it), the worker
// reconnects at once, and the job — with no restarts to spend — trains on
// in its first attempt, every step once. A link that breaks is not a lost
// worker: its trainers never stopped.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "accumulus/v1/controller.pb.h"
#include "tests/support/job_specs.h"
#include "tests/support/proto_json.h"
#include "tests/support/read_file.h"
#include "tests/support/tcp_relay.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

TEST(LinkFault, AWorkerLinkThatIsResetCostsTheJobNothing) {
  TestCluster cluster;
  TcpRelay relay(cluster.controller_port());
  const std::string worker = cluster.StartWorker(1, {"--controller", relay.address()});
  const std::string id = SubmitJob(cluster, "long.yaml", LongMlpJob(10));
  ASSERT_FALSE(id.empty());

  std::unique_ptr<Subprocess> watch = cluster.StartCli({"-o", "json", "watch", id});
  std::vector<int64_t> steps;
  std::string said;  // the job's log lines
  int cut = 0;
  std::string line;
  while (watch->ReadLine(&line)) {
    const v1::JobEvent e = FromJson<v1::JobEvent>(line);
    if (e.has_log()) said += e.log().text() + "\n";
    if (!e.has_step() || e.stale()) continue;
    steps.push_back(e.step().step());
    if (cut == 0 && e.step().step() >= 20) cut = relay.Cut();
  }
  EXPECT_EQ(watch->Wait().exit_code, 0) << "the job succeeded";
  EXPECT_EQ(cut, 1) << "the worker's one link was reset";
  EXPECT_GE(relay.accepted(), 2) << "and the worker reconnected";
  const std::string log = ReadFile(cluster.WorkerLog(worker));
  EXPECT_NE(log.find("link to controller ended"), std::string::npos) << log;
  EXPECT_NE(said.find("worker " + worker + "'s link ended ("), std::string::npos) << said;

  const v1::Job job = GetJob(cluster, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
  EXPECT_EQ(job.attempt(), 1) << "the first attempt trained on";
  ASSERT_EQ(static_cast<int64_t>(steps.size()), job.steps_total());
  for (size_t i = 0; i < steps.size(); ++i) {
    ASSERT_EQ(steps[i], static_cast<int64_t>(i) + 1) << "every step once, in order";
  }
}

}  // namespace
}  // namespace accumulus::testing
