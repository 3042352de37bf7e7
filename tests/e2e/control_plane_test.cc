// Faults of an operator's bad day, against the control plane's invariants:
// one controller per state, slots that are always freed, workers that come
// back quickly after a controller restart, a checkpoint that cannot be
// written failing its job once, and watch streams that one client cannot
// take from everyone.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "accumulus/v1/controller.pb.h"
#include "tests/support/job_specs.h"
#include "tests/support/proto_json.h"
#include "tests/support/read_file.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

std::string HostName() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

std::string SmallJob(const std::string& extra = "") {
  return TinyJob("{kind: mlp, hidden: [8]}", extra);
}

TEST(ControlPlane, ASecondControllerOnTheSameStateRefusesAndNamesTheFirst) {
  TestCluster cluster;
  const SpawnOptions options =
      StandaloneController(cluster.controller_data_dir(), cluster.dir() + "/second-controller.log",
                           ControllerSecurityArgs());
  auto second = Subprocess::Spawn(options);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  const Subprocess::ExitInfo exit = (*second)->Wait();
  EXPECT_EQ(exit.exit_code, 1) << exit.description;
  const std::string log = ReadFile(options.log_path);
  EXPECT_NE(log.find("in use by another controller (pid " +
                     std::to_string(cluster.controller_pid()) + " on host " + HostName()),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(cluster.controller_data_dir() + "/state.db.lock"), std::string::npos) << log;

  // The first still serves.
  CliResult listed = cluster.Cli({"list"});
  EXPECT_EQ(listed.exit_code, 0) << listed.stderr_text;
}

// A client that retries a submit (its reply lost to a crash) with the same
// request id gets the job its first try made, also from a restarted
// controller; a fresh state never hands out an id the old one did.
TEST(ControlPlane, ASubmitRetriedWithItsRequestIdMakesOneJobAcrossARestart) {
  TestCluster cluster;
  const std::string spec = cluster.WriteSpec("small.yaml", SmallJob());
  const CliResult first = cluster.Cli({"-o", "json", "submit", spec, "--request-id", "nightly-7"});
  ASSERT_EQ(first.exit_code, 0) << first.stderr_text;
  const v1::Job job = FromJson<v1::Job>(first.lines.at(0));
  EXPECT_EQ(job.request_id(), "nightly-7");
  EXPECT_EQ(job.owner(), "admin");

  cluster.RestartController();
  const CliResult retry = cluster.Cli({"-o", "json", "submit", spec, "--request-id", "nightly-7"});
  ASSERT_EQ(retry.exit_code, 0) << retry.stderr_text;
  EXPECT_EQ(FromJson<v1::Job>(retry.lines.at(0)).id(), job.id());
  const CliResult listed = cluster.Cli({"-o", "json", "list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.stderr_text;
  EXPECT_EQ(FromJson<v1::ListJobsResponse>(listed.lines.at(0)).jobs_size(), 1);

  // Another spec under the same id is refused, naming the job it made.
  const CliResult reused =
      cluster.Cli({"submit", cluster.WriteSpec("other.yaml", SmallJob("seed: 9\n")), "--request-id",
                   "nightly-7"});
  EXPECT_EQ(reused.exit_code, 1);
  EXPECT_NE(reused.stderr_text.find("request_id nightly-7 made " + job.id()), std::string::npos)
      << reused.stderr_text;

  // A new state (the old one deleted) starts with new ids.
  cluster.RestartController([&] { std::filesystem::remove_all(cluster.controller_data_dir()); });
  const CliResult fresh = cluster.Cli({"-o", "json", "submit", spec});
  ASSERT_EQ(fresh.exit_code, 0) << fresh.stderr_text;
  EXPECT_NE(FromJson<v1::Job>(fresh.lines.at(0)).id(), job.id());
}

// With a retention of one finished job, a data-parallel job that failed on
// one rank while its other rank still stops is not pruned from under that
// rank's slot; killing that rank's worker afterwards crashes nothing, and
// both slots take new jobs.
TEST(ControlPlane, RetentionNeverDropsAJobWhoseRanksStillHoldSlots) {
  TestCluster cluster({"--keep-finished-jobs", "1"});
  const std::vector<std::string> workers{cluster.StartWorker(1), cluster.StartWorker(1)};
  const std::string gang = SubmitJob(cluster, "gang.yaml", R"(
model: {kind: mlp, hidden: [16]}
data: {samples: 100000, features: 8, outputs: 3}
micro_batch: 4
accumulation_steps: 2
devices: 2
epochs: 10
collective_timeout_seconds: 3
optimizer: {kind: sgd, lr: 0.1}
threads: {intra_op: 1, blas: 1}
)");
  // Both ranks train: their plans name their pids.
  std::map<int32_t, v1::RuntimeInfo> ranks;
  std::unique_ptr<Subprocess> watch = cluster.StartCli({"-o", "json", "watch", gang});
  std::string line;
  while (ranks.size() < 2 && watch->ReadLine(&line)) {
    const v1::JobEvent e = FromJson<v1::JobEvent>(line);
    if (e.has_runtime()) ranks[e.runtime().rank()] = e.runtime();
  }
  ASSERT_EQ(ranks.size(), 2u);
  const v1::Job placed = GetJob(cluster, gang);
  ASSERT_EQ(placed.placements_size(), 2);
  const std::string rank0_worker = placed.placements(0).worker_id();

  // Rank 0 is frozen, then rank 1 dies: the job fails at once, and rank 0
  // holds its slot until its worker's cancel grace (5 s) ends in a kill.
  ASSERT_EQ(kill(static_cast<pid_t>(ranks[0].pid()), SIGSTOP), 0);
  ASSERT_EQ(kill(static_cast<pid_t>(ranks[1].pid()), SIGKILL), 0);
  while (watch->ReadLine(&line)) {
  }
  watch->Wait();
  // Two one-device jobs finish meanwhile on rank 1's slot: past the
  // retention of one.
  for (int i = 0; i < 2; ++i) {
    CliResult small = cluster.Cli({"submit", "-w", cluster.WriteSpec("small.yaml", SmallJob())});
    ASSERT_EQ(small.exit_code, 0) << small.stderr_text;
  }
  cluster.KillWorker(rank0_worker);  // with its rank (most likely) still stopping
  const std::string restarted = cluster.StartWorker(1);

  // The controller lives, and both slots are free: a two-device job runs.
  CliResult next = cluster.Cli({"submit", "-w", cluster.WriteSpec("next.yaml", R"(
model: {kind: mlp, hidden: [16]}
data: {samples: 64, features: 8, outputs: 3}
micro_batch: 4
accumulation_steps: 2
devices: 2
epochs: 1
optimizer: {kind: sgd, lr: 0.1}
threads: {intra_op: 1, blas: 1}
)")});
  EXPECT_EQ(next.exit_code, 0) << next.stderr_text;
  CliResult listed = cluster.Cli({"-o", "json", "list"});
  EXPECT_EQ(listed.exit_code, 0) << listed.stderr_text;
}

// A checkpoint dir the trainer cannot write fails the job on the first try
// (when its start is recorded in the dir's lineage, before step 1),
// permanently (max_restarts is not spent on it), naming the path and the
// OS error. As root (CI) permissions do not stop a write, so the directory
// is made impossible: a regular file stands where it should be.
void ExpectUnwritableCheckpointFailsOnce(const TestCluster& cluster, const std::string& dir,
                                         const std::string& os_error) {
  const std::string id =
      SubmitJob(cluster, "unwritable.yaml",
                SmallJob("max_restarts: 3\ncheckpoint: {dir: " + dir + ", every_steps: 2}\n"));
  CliResult watched = cluster.Cli({"watch", id});
  EXPECT_NE(watched.exit_code, 0);
  const v1::Job job = GetJob(cluster, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(job.failure_class(), v1::FAILURE_CLASS_STORAGE) << job.reason();
  EXPECT_EQ(job.attempt(), 1) << "not retried: " << job.reason();
  EXPECT_EQ(job.attempts_size(), 0);
  EXPECT_NE(job.reason().find("checkpoint lineage: cannot create the checkpoint dir " + dir),
            std::string::npos)
      << job.reason();
  EXPECT_NE(job.reason().find(os_error), std::string::npos) << job.reason();
}

TEST(ControlPlane, ACheckpointDirThatCannotBeMadeFailsTheJobAtItsStartPermanently) {
  TestCluster cluster;
  cluster.StartWorker(1);
  std::ofstream(cluster.dir() + "/a-file") << "not a directory\n";
  ExpectUnwritableCheckpointFailsOnce(cluster, cluster.dir() + "/a-file/checkpoints",
                                      "Not a directory");
}

TEST(ControlPlane, ACheckpointDirWithoutWritePermissionFailsTheJobOncePermanently) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes through any permission bits";
  TestCluster cluster;
  cluster.StartWorker(1);
  const std::string locked = cluster.dir() + "/locked";
  ASSERT_EQ(mkdir(locked.c_str(), 0555), 0);
  ExpectUnwritableCheckpointFailsOnce(cluster, locked + "/checkpoints", "Permission denied");
}

// docs/operations.md: after a controller comes back, every worker registers
// again within max_backoff (2 s) × 1.2 jitter plus a handshake: 3 s. Asserted
// at twice that; the two stacked backoffs this replaced took 11–13 s.
TEST(ControlPlane, WorkersReRegisterWithinTheDocumentedBoundAfterAControllerRestart) {
  TestCluster cluster;
  const std::vector<std::string> workers{cluster.StartWorker(1), cluster.StartWorker(1)};
  ASSERT_TRUE(
      cluster.WaitForWorkers(workers, std::chrono::steady_clock::now() + std::chrono::seconds(30)));
  std::chrono::steady_clock::time_point back;
  cluster.RestartController([] {
    // The outage itself (not a synchronization): long enough for every
    // worker's redial backoff to reach its maximum.
    std::this_thread::sleep_for(std::chrono::seconds(10));
  });
  back = std::chrono::steady_clock::now();  // the new controller said it listens
  EXPECT_TRUE(cluster.WaitForWorkers(workers, back + std::chrono::seconds(6)))
      << "not re-registered within 6 s";
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - back).count();
  std::printf("re-registered %zu workers %.2f s after the controller restarted\n", workers.size(),
              seconds);
}

// Watch streams are bounded per caller (2 here) and in all (3): a caller
// at its limit is refused, naming the flag, while another may still watch
// up to the total; a stream that ends gives its place back.
TEST(ControlPlane, WatchStreamsAreBoundedPerCallerAndInAll) {
  TestCluster cluster({"--max-watchers", "3", "--max-watchers-per-caller", "2"});
  const std::string id = SubmitJob(cluster, "queued.yaml", SmallJob());  // no worker: it waits
  ASSERT_FALSE(id.empty());
  // Open once the stream has delivered its first event.
  auto open_watch = [&](const std::string& token_file) {
    std::unique_ptr<Subprocess> watch = cluster.StartCliAs(token_file, {"-o", "json", "watch", id});
    std::string line;
    EXPECT_TRUE(watch->ReadLine(&line)) << "the watch got no event";
    return watch;
  };
  const TestTokens& tokens = TestTokenFiles();
  std::unique_ptr<Subprocess> admin_1 = open_watch(tokens.admin);
  std::unique_ptr<Subprocess> admin_2 = open_watch(tokens.admin);
  CliResult refused = cluster.CliAs(tokens.admin, {"watch", id});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.stderr_text.find("you already have 2 watch streams open, the limit for one "
                                     "caller (--max-watchers-per-caller)"),
            std::string::npos)
      << refused.stderr_text;

  std::unique_ptr<Subprocess> viewer = open_watch(tokens.viewer);
  refused = cluster.CliAs(tokens.viewer, {"watch", id});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.stderr_text.find("already serves 3 watch streams, its limit (--max-watchers)"),
            std::string::npos)
      << refused.stderr_text;

  admin_1->Signal(SIGTERM);
  admin_1->Wait();
  ASSERT_TRUE(cluster.WaitForMetricLine(
      "accumulus_watchers 2", std::chrono::steady_clock::now() + std::chrono::seconds(30)))
      << "the stream never ended";
  std::unique_ptr<Subprocess> viewer_2 = open_watch(tokens.viewer);
  for (auto* watch : {admin_2.get(), viewer.get(), viewer_2.get()}) {
    watch->Signal(SIGTERM);
    watch->Wait();
  }
}

// Unfinished jobs are bounded per owner: one more submit is refused by the
// controller, naming the limit and its flag, and makes no job.
TEST(ControlPlane, ASubmitBeyondTheOwnersUnfinishedJobsIsRefused) {
  TestCluster cluster({"--max-active-jobs-per-owner", "1"});
  ASSERT_FALSE(SubmitJob(cluster, "first.yaml", SmallJob()).empty());  // no worker: it waits
  CliResult refused = cluster.Cli({"submit", cluster.WriteSpec("second.yaml", SmallJob())});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.stderr_text.find("admin already has 1 unfinished jobs, the limit for one "
                                     "owner (--max-active-jobs-per-owner): nothing was submitted"),
            std::string::npos)
      << refused.stderr_text;
  CliResult listed = cluster.Cli({"-o", "json", "list"});
  EXPECT_EQ(listed.lines.size(), 1u) << "one job";
}

// Submits are bounded per owner and minute, over real gRPC: the CLI says
// why, and what was refused made no job.
TEST(ControlPlane, ASubmitBeyondTheOwnersRateIsRefused) {
  TestCluster cluster({"--max-submits-per-minute-per-owner", "1"});
  ASSERT_FALSE(SubmitJob(cluster, "first.yaml", SmallJob()).empty());
  CliResult refused = cluster.Cli({"submit", cluster.WriteSpec("second.yaml", SmallJob())});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.stderr_text.find("admin submits faster than the limit for one owner, 1 job a "
                                     "minute (--max-submits-per-minute-per-owner): nothing was "
                                     "submitted; the next submit fits in "),
            std::string::npos)
      << refused.stderr_text;
  CliResult listed = cluster.Cli({"-o", "json", "list"});
  EXPECT_EQ(listed.lines.size(), 1u) << "one job";
}

}  // namespace
}  // namespace accumulus::testing
