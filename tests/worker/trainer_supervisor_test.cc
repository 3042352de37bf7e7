// The trainer supervisor with stand-in trainers (shell scripts that behave
// as a trainer would towards signals): a cancel is a SIGTERM, a trainer that
// does not stop within the grace period is killed, a crash fails the job
// with the rank, the worker and the exit, and a fence kills at once. Each
// script says it is ready (its signal handling set up) through a FIFO, so
// no test waits on time.
#include "worker/trainer_supervisor.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "tests/support/temp_dir.h"

namespace accumulus::worker {
namespace {

using Clock = std::chrono::steady_clock;

class TrainerSupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // As accumulus-worker does (common/subprocess.h): a trainer that exits
    // before the supervisor's last write to it must give EPIPE, not kill
    // the supervisor.
    signal(SIGPIPE, SIG_IGN);
    ASSERT_EQ(mkfifo(ready_.c_str(), 0600), 0);
  }

  // A stand-in trainer running `body` after it has said it is ready.
  std::string Trainer(const std::string& setup, const std::string& body) {
    const std::string path = temp_.path() + "/trainer.sh";
    std::ofstream(path) << "#!/bin/sh\n"
                        << setup << "\necho ready > " << ready_ << "\n"
                        << body << "\n";
    chmod(path.c_str(), 0755);
    return path;
  }

  std::unique_ptr<TrainerSupervisor> Supervisor(const std::string& trainer, int grace_ms,
                                                std::function<int64_t()> oom_kills = nullptr) {
    SupervisorOptions options;
    options.trainer_binary = trainer;
    options.worker_id = "w1";
    options.work_dir = temp_.path() + "/work";
    options.cancel_grace_ms = grace_ms;
    options.oom_kills = std::move(oom_kills);
    return std::make_unique<TrainerSupervisor>(options, [this](v1::WorkerMessage m) {
      if (!m.has_status()) return;
      {
        MutexLock lock(&mutex_);
        statuses_.push_back(m.status());
      }
      changed_.NotifyAll();
    });
  }

  static v1::Assignment OneRank(const std::string& job_id) {
    v1::Assignment a;
    a.set_job_id(job_id);
    a.set_attempt(3);
    a.add_ranks(0);
    a.set_world_size(1);
    a.add_devices()->set_kind(v1::DEVICE_KIND_CPU);
    return a;
  }

  // Blocks until the trainer has opened the FIFO and written to it.
  void WaitReady() {
    std::ifstream fifo(ready_);
    std::string word;
    fifo >> word;
    ASSERT_EQ(word, "ready");
  }

  // The job's terminal status (bounded wait).
  v1::AssignmentStatus Terminal() {
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    MutexLock lock(&mutex_);
    while (statuses_.empty() || statuses_.back().state() == v1::JOB_STATE_RUNNING) {
      if (!changed_.WaitUntil(&mutex_, deadline)) break;
    }
    return statuses_.empty() ? v1::AssignmentStatus() : statuses_.back();
  }

  const testing::TempDir temp_;
  const std::string ready_ = temp_.path() + "/ready";
  Mutex mutex_;
  CondVar changed_;
  std::vector<v1::AssignmentStatus> statuses_ GUARDED_BY(mutex_);
};

TEST_F(TrainerSupervisorTest, ATrainerThatIgnoresTheCancelIsKilledAfterTheGrace) {
  auto supervisor = Supervisor(Trainer("trap '' TERM", "while :; do sleep 0.05; done"), 300);
  supervisor->Assign(OneRank("job-1"), std::chrono::milliseconds(0));
  WaitReady();
  const auto cancelled = Clock::now();
  supervisor->Cancel("job-1", "by request");
  const v1::AssignmentStatus status = Terminal();
  EXPECT_GE(Clock::now() - cancelled, std::chrono::milliseconds(300)) << "the grace was given";
  EXPECT_EQ(status.state(), v1::JOB_STATE_CANCELLED) << status.reason();
  EXPECT_NE(status.reason().find("killed by signal 9"), std::string::npos) << status.reason();
  EXPECT_EQ(status.attempt(), 3);
  EXPECT_EQ(status.failure_class(), v1::FAILURE_CLASS_CANCELLED);
  EXPECT_TRUE(supervisor->RunningJobs().empty());
}

TEST_F(TrainerSupervisorTest, ATrainerThatStopsOnTheCancelIsNotKilled) {
  auto supervisor =
      Supervisor(Trainer("trap 'exit 0' TERM", "while :; do sleep 0.05; done"), 60000);
  supervisor->Assign(OneRank("job-1"), std::chrono::milliseconds(0));
  WaitReady();
  supervisor->Cancel("job-1", "by request");
  const v1::AssignmentStatus status = Terminal();
  EXPECT_EQ(status.state(), v1::JOB_STATE_CANCELLED) << "within the wait, far inside the grace";
  EXPECT_EQ(status.reason().find("signal 9"), std::string::npos) << status.reason();
}

TEST_F(TrainerSupervisorTest, ACrashFailsTheJobNamingTheRankTheWorkerAndTheExit) {
  auto supervisor = Supervisor(Trainer("", "echo 'cannot read the data' >&2; exit 3"), 60000);
  supervisor->Assign(OneRank("job-1"), std::chrono::milliseconds(0));
  WaitReady();
  const v1::AssignmentStatus status = Terminal();
  EXPECT_EQ(status.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(status.reason().rfind("rank 0 on worker w1: trainer pid ", 0), 0u) << status.reason();
  EXPECT_NE(status.reason().find("exit code 3"), std::string::npos) << status.reason();
  EXPECT_NE(status.reason().find("cannot read the data"), std::string::npos)
      << "the log's tail: " << status.reason();
  EXPECT_FALSE(status.permanent()) << "a crash may pass on a retry";
  EXPECT_EQ(status.failure_class(), v1::FAILURE_CLASS_TRAINER_CRASHED) << "no exit message";
}

TEST_F(TrainerSupervisorTest, ACrashQuotesTheLastWholeLinesOfALongLog) {
  auto supervisor = Supervisor(
      Trainer("",
              "i=0; while [ $i -lt 200 ]; do echo \"log line $i\" >&2; i=$((i+1)); done; exit 3"),
      60000);
  supervisor->Assign(OneRank("job-1"), std::chrono::milliseconds(0));
  WaitReady();
  const std::string reason = Terminal().reason();
  const size_t ends = reason.find(" ends: ");
  ASSERT_NE(ends, std::string::npos) << reason;
  const std::string tail = reason.substr(ends + 7);
  EXPECT_EQ(tail.rfind("log line ", 0), 0u) << "starts at a line: " << tail;
  EXPECT_EQ(tail.substr(tail.size() - 12), "log line 199") << tail;
  EXPECT_LE(tail.size(), 600u);
}

TEST_F(TrainerSupervisorTest, MoreThreadsThanTheSlotHasCoresFailsTheJobBeforeATrainerStarts) {
  auto supervisor = Supervisor(Trainer("", "exit 0"), 60000);
  v1::Assignment a = OneRank("job-1");
  a.mutable_devices(0)->set_cores(2);
  a.mutable_spec()->mutable_threads()->set_intra_op(4);
  a.mutable_spec()->mutable_threads()->set_blas(2);
  supervisor->Assign(a, std::chrono::milliseconds(0));
  const v1::AssignmentStatus status = Terminal();
  EXPECT_EQ(status.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(status.reason(),
            "threads.intra_op 4 exceeds the 2 core(s) of device slot cpu:0 on "
            "worker w1");
  EXPECT_TRUE(status.permanent()) << "the spec must change; a retry cannot help";
  EXPECT_EQ(status.failure_class(), v1::FAILURE_CLASS_BAD_SPEC);
  EXPECT_FALSE(std::filesystem::exists(temp_.path() + "/work/job-1/rank-0.log"))
      << "no trainer was started";
}

// The worker shutting down is not a cancel: the job is reported preempted
// (the controller moves it), and what is assigned afterwards is handed back
// without a trainer.
TEST_F(TrainerSupervisorTest, StopAllReportsItsJobsPreemptedAndStartsNothingAfter) {
  auto supervisor =
      Supervisor(Trainer("trap 'exit 0' TERM", "while :; do sleep 0.05; done"), 60000);
  supervisor->Assign(OneRank("job-1"), std::chrono::milliseconds(0));
  WaitReady();
  supervisor->StopAll();
  const v1::AssignmentStatus stopped = Terminal();
  EXPECT_EQ(stopped.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(stopped.failure_class(), v1::FAILURE_CLASS_PREEMPTED);
  EXPECT_FALSE(stopped.permanent());
  EXPECT_EQ(stopped.reason().rfind("worker w1 is shutting down; ", 0), 0u) << stopped.reason();

  supervisor->Assign(OneRank("job-2"), std::chrono::milliseconds(0));
  const v1::AssignmentStatus refused = Terminal();
  EXPECT_EQ(refused.job_id(), "job-2");
  EXPECT_EQ(refused.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(refused.failure_class(), v1::FAILURE_CLASS_PREEMPTED);
  EXPECT_EQ(refused.reason(), "worker w1 is shutting down; not started");
  EXPECT_TRUE(supervisor->RunningJobs().empty());
}

// Fenced because the worker lost the controller (controller_unreachable), or
// because this daemon stalled itself (worker_lost; LeaseKeeper tells which):
// killed at once, and reported with the class it was given.
class FenceTest : public TrainerSupervisorTest,
                  public ::testing::WithParamInterface<v1::FailureClass> {};

TEST_P(FenceTest, KillsAtOnceWithoutTheGraceAndReportsTheClassGiven) {
  auto supervisor = Supervisor(Trainer("trap '' TERM", "while :; do sleep 0.05; done"), 600000);
  supervisor->Assign(OneRank("job-1"), std::chrono::milliseconds(0));
  WaitReady();
  supervisor->Fence("the worker's lease lapsed", GetParam());
  const v1::AssignmentStatus status = Terminal();
  EXPECT_EQ(status.state(), v1::JOB_STATE_FAILED) << "(a 10-minute grace would time the wait out)";
  EXPECT_EQ(status.reason(), "the worker's lease lapsed");
  EXPECT_EQ(status.failure_class(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(ByCause, FenceTest,
                         ::testing::Values(v1::FAILURE_CLASS_CONTROLLER_UNREACHABLE,
                                           v1::FAILURE_CLASS_WORKER_LOST));

// A trainer whose watchdog ended it (exit code 75: no renewal came for its
// lease) was let down by this daemon, which did not run: the status says
// so, rather than quoting the message its exit cut short, and classes it
// worker_lost, not a crash.
TEST_F(TrainerSupervisorTest, ATrainerWhoseLeaseLapsedBlamesTheStalledDaemonNotACrash) {
  auto supervisor = Supervisor(
      Trainer("", "printf 'half a mess' >&3; echo 'lease lapsed: stopping now' >&2; exit 75"),
      60000);
  supervisor->Assign(OneRank("job-1"), std::chrono::milliseconds(800));
  WaitReady();
  const v1::AssignmentStatus status = Terminal();
  EXPECT_EQ(status.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(status.reason().find("stopped itself: worker w1 did not renew its lease for 800 ms"),
            std::string::npos)
      << status.reason();
  EXPECT_EQ(status.reason().find("garbled"), std::string::npos) << status.reason();
  EXPECT_EQ(status.failure_class(), v1::FAILURE_CLASS_WORKER_LOST);
}

// A trainer killed by SIGKILL, not by this daemon, while the kernel counted
// an OOM kill (here a file the stand-in trainer bumps before it dies, read
// as the cgroup's count): the status says the OOM killer most likely ended
// it, and classes it out_of_memory. The same kill with the count unchanged
// stays a crash.
class OomKillTest : public TrainerSupervisorTest, public ::testing::WithParamInterface<bool> {};

TEST_P(OomKillTest, ASigkilledTrainerIsOutOfMemoryOnlyWhenTheKernelCountedAnOomKill) {
  const bool counted = GetParam();
  const std::string count = temp_.path() + "/oom_kills";
  std::ofstream(count) << "3\n";
  auto supervisor =
      Supervisor(Trainer("", std::string(counted ? "echo 4 > " + count + "; " : "") + "kill -9 $$"),
                 60000, [count] {
                   int64_t kills = -1;
                   std::ifstream(count) >> kills;
                   return kills;
                 });
  supervisor->Assign(OneRank("job-1"), std::chrono::milliseconds(0));
  WaitReady();
  const v1::AssignmentStatus status = Terminal();
  EXPECT_EQ(status.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(status.reason().find("killed by signal 9"), std::string::npos) << status.reason();
  if (counted) {
    EXPECT_NE(status.reason().find("most likely by the kernel's OOM killer (this worker's memory "
                                   "cgroup counted 1 OOM kill(s) since the job started)"),
              std::string::npos)
        << status.reason();
    EXPECT_EQ(status.failure_class(), v1::FAILURE_CLASS_OUT_OF_MEMORY);
  } else {
    EXPECT_EQ(status.reason().find("OOM"), std::string::npos) << status.reason();
    EXPECT_EQ(status.failure_class(), v1::FAILURE_CLASS_TRAINER_CRASHED);
  }
}

INSTANTIATE_TEST_SUITE_P(CountGrewOrNot, OomKillTest, ::testing::Bool());

}  // namespace
}  // namespace accumulus::worker
