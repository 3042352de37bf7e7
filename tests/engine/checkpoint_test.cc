// Checkpoints at window boundaries: a run is deterministic, a run that dies
// mid-window resumes from its newest checkpoint to the very same parameters
// with contiguous steps, a graceful stop checkpoints where it stops, and a
// truncated, garbled or foreign checkpoint is passed over for the one before.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "tests/support/engine_test_support.h"
#include "worker/engine/trainer.h"

namespace accumulus::engine {
namespace {

namespace fs = std::filesystem;
using testing::BitIdentical;
using testing::RecordingSink;
using testing::RunTraining;

TrainConfig Job(OptimizerKind optimizer, const std::string& dir) {
  TrainConfig c;
  c.model.hidden = {32, 32};
  c.data.samples = 96;
  c.data.features = 8;
  c.data.outputs = 3;
  c.data.seed = 4;
  c.optimizer.kind = optimizer;
  c.optimizer.lr = optimizer == OptimizerKind::kSgd ? 0.1 : 0.01;
  c.optimizer.momentum = 0.9;
  c.optimizer.weight_decay = 0.01;
  c.lr_schedule.kind = LrScheduleKind::kCosine;
  c.lr_schedule.warmup_steps = 2;
  c.micro_batch = 4;
  c.accumulation_steps = 4;
  c.global_batch = 16;
  c.epochs = 2;  // 12 steps
  c.seed = 9;
  c.checkpoint_dir = dir;
  c.job_id = "job-written";
  c.checkpoint_every_steps = 3;
  return c;
}

std::vector<int64_t> Steps(const RecordingSink& sink) {
  std::vector<int64_t> out;
  for (const auto& s : sink.steps) out.push_back(s.step);
  return out;
}

std::vector<std::string> CheckpointFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".ckpt") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class Checkpoints : public ::testing::TestWithParam<OptimizerKind> {
 protected:
  const testing::TempDir temp_;
  const std::string dir_ = temp_.path() + "/job";
};

// What makes a CPU run deterministic: a seeded initialization and data, a
// sample order from our own SplitMix64 permutation, and LibTorch's CPU
// kernels on fixed threads (the test binary's), which reduce in a fixed order.
TEST_P(Checkpoints, ARunIsDeterministic) {
  TrainConfig c = Job(GetParam(), "");
  const auto first = RunTraining(c);
  const auto second = RunTraining(c);
  ASSERT_TRUE(first->status.ok()) << first->status.ToString();
  EXPECT_TRUE(BitIdentical(first->parameters, second->parameters));
}

// Each checkpoint is reported: its step, the file and its size.
TEST_P(Checkpoints, EachCheckpointIsReportedWithItsFile) {
  TrainConfig c = Job(GetParam(), dir_);
  c.checkpoint_keep = 10;  // every one stays to be looked at
  const auto run = RunTraining(c);
  ASSERT_TRUE(run->status.ok()) << run->status.ToString();
  std::vector<int64_t> steps;
  for (const engine::CheckpointReport& checkpoint : run->sink.checkpoints) {
    steps.push_back(checkpoint.step);
    ASSERT_TRUE(fs::exists(checkpoint.path)) << checkpoint.path;
    EXPECT_EQ(checkpoint.bytes, static_cast<int64_t>(fs::file_size(checkpoint.path)));
    EXPECT_GT(checkpoint.bytes, 0);
  }
  // Every 3 of 12 steps; after the last one the run ends, and its state is
  // the output.
  EXPECT_EQ(steps, (std::vector<int64_t>{3, 6, 9}));
}

TEST_P(Checkpoints, ARunThatDiesMidWindowResumesToTheSameParameters) {
  const auto reference = RunTraining(Job(GetParam(), ""));
  ASSERT_TRUE(reference->status.ok()) << reference->status.ToString();

  TrainOptions crash;
  crash.after_backward = [](int64_t step, const std::vector<torch::Tensor>&) {
    if (step == 8) throw std::runtime_error("killed mid-window");
  };
  const auto died = RunTraining(Job(GetParam(), dir_), crash);
  ASSERT_FALSE(died->status.ok());
  EXPECT_EQ(Steps(died->sink), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(CheckpointFiles(dir_), (std::vector<std::string>{"step-00000003.attempt-0.ckpt",
                                                             "step-00000006.attempt-0.ckpt"}));

  const auto resumed = RunTraining(Job(GetParam(), dir_));
  ASSERT_TRUE(resumed->status.ok()) << resumed->status.ToString();
  EXPECT_EQ(resumed->sink.run.resumed_from_step, 6);
  EXPECT_EQ(Steps(resumed->sink), (std::vector<int64_t>{7, 8, 9, 10, 11, 12}))
      << "no step applied twice, none skipped";
  EXPECT_DOUBLE_EQ(resumed->sink.steps.front().lr, reference->sink.steps[6].lr)
      << "the LR schedule continues";
  EXPECT_TRUE(BitIdentical(resumed->parameters, reference->parameters));
}

TEST_P(Checkpoints, AGracefulStopCheckpointsWhereItStops) {
  const auto reference = RunTraining(Job(GetParam(), ""));
  std::atomic<bool> stop{false};
  TrainOptions options;
  options.stop_requested = &stop;
  options.after_backward = [&stop](int64_t step, const std::vector<torch::Tensor>&) {
    if (step == 5) stop = true;  // as SIGTERM during step 5
  };
  TrainConfig c = Job(GetParam(), dir_);
  c.checkpoint_every_steps = 0;  // only on stop
  const auto stopped = RunTraining(c, options);
  EXPECT_EQ(stopped->status.code(), StatusCode::kCancelled);
  EXPECT_EQ(CheckpointFiles(dir_), (std::vector<std::string>{"step-00000005.attempt-0.ckpt"}));
  const auto resumed = RunTraining(c);
  ASSERT_TRUE(resumed->status.ok()) << resumed->status.ToString();
  EXPECT_EQ(resumed->sink.run.resumed_from_step, 5);
  EXPECT_TRUE(BitIdentical(resumed->parameters, reference->parameters));
}

// After the checkpoint of step 3, the checkpoint directory is moved aside
// and a plain file takes its name, so no later checkpoint can be written
// there (as a full disk: a storage failure, whoever runs the test).
TrainOptions BlockCheckpointsFromStep(int64_t from, const std::string& dir,
                                      std::atomic<bool>* stop = nullptr, int64_t stop_at = 0) {
  TrainOptions options;
  options.stop_requested = stop;
  options.after_backward = [=](int64_t step, const std::vector<torch::Tensor>&) {
    if (step == from && fs::is_directory(dir)) {
      fs::rename(dir, dir + ".aside");
      std::ofstream(dir) << "not a directory";
    }
    if (stop != nullptr && step == stop_at) *stop = true;
  };
  return options;
}

TEST_P(Checkpoints, ACheckpointThatCannotBeWrittenIsReportedAndTrainingGoesOn) {
  const auto reference = RunTraining(Job(GetParam(), ""));
  ASSERT_TRUE(reference->status.ok()) << reference->status.ToString();
  const auto run = RunTraining(Job(GetParam(), dir_), BlockCheckpointsFromStep(4, dir_));
  ASSERT_TRUE(run->status.ok()) << run->status.ToString();
  EXPECT_TRUE(BitIdentical(run->parameters, reference->parameters));
  ASSERT_EQ(run->sink.checkpoints.size(), 1u);
  EXPECT_EQ(run->sink.checkpoints[0].step, 3);
  ASSERT_EQ(run->sink.checkpoint_failures.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const engine::CheckpointFailure& failed = run->sink.checkpoint_failures[i];
    EXPECT_EQ(failed.step, 6 + 3 * static_cast<int64_t>(i));
    EXPECT_EQ(failed.resumes_after_step, 3) << "the newest checkpoint written";
    EXPECT_NE(failed.reason.find(dir_), std::string::npos) << failed.reason;
  }
  EXPECT_NE(run->Logs().find("checkpoint after step 6 not written: "), std::string::npos)
      << run->Logs();

  // A restart resumes from the one written, to the same parameters.
  fs::remove(dir_);
  fs::rename(dir_ + ".aside", dir_);
  TrainConfig no_more = Job(GetParam(), dir_);
  no_more.checkpoint_every_steps = 0;
  const auto resumed = RunTraining(no_more);
  ASSERT_TRUE(resumed->status.ok()) << resumed->status.ToString();
  EXPECT_EQ(resumed->sink.run.resumed_from_step, 3);
  EXPECT_TRUE(BitIdentical(resumed->parameters, reference->parameters));
}

TEST_P(Checkpoints, AGracefulStopWhoseCheckpointCannotBeWrittenStillStops) {
  std::atomic<bool> stop{false};
  const auto stopped =
      RunTraining(Job(GetParam(), dir_), BlockCheckpointsFromStep(4, dir_, &stop, 5));
  EXPECT_EQ(stopped->status.code(), StatusCode::kCancelled) << stopped->status.ToString();
  ASSERT_EQ(stopped->sink.checkpoint_failures.size(), 1u);
  EXPECT_EQ(stopped->sink.checkpoint_failures[0].step, 5);
  EXPECT_EQ(stopped->sink.checkpoint_failures[0].resumes_after_step, 3);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, Checkpoints,
                         ::testing::Values(OptimizerKind::kSgd, OptimizerKind::kAdamW));

class CheckpointDamage : public Checkpoints {
 protected:
  // Checkpoints after steps 3, 6 and 9 (the run dies in step 10).
  void SetUp() override {
    TrainOptions crash;
    crash.after_backward = [](int64_t step, const std::vector<torch::Tensor>&) {
      if (step == 10) throw std::runtime_error("killed");
    };
    ASSERT_FALSE(RunTraining(Job(OptimizerKind::kAdamW, dir_), crash)->status.ok());
  }

  // Resumes, expecting step `from` and the uninterrupted result, and
  // returns what the run said about the checkpoints it passed over.
  std::string ResumeExpecting(int64_t from) {
    const auto reference = RunTraining(Job(OptimizerKind::kAdamW, ""));
    const auto resumed = RunTraining(Job(OptimizerKind::kAdamW, dir_));
    EXPECT_TRUE(resumed->status.ok()) << resumed->status.ToString();
    EXPECT_EQ(resumed->sink.run.resumed_from_step, from);
    EXPECT_TRUE(BitIdentical(resumed->parameters, reference->parameters));
    return resumed->Logs();
  }

  const std::string newest_ = dir_ + "/step-00000009.attempt-0.ckpt";
};

TEST_F(CheckpointDamage, ATruncatedCheckpointFallsBackToThePreviousOne) {
  fs::resize_file(newest_, fs::file_size(newest_) / 2);
  EXPECT_NE(ResumeExpecting(6).find("step-00000009.attempt-0.ckpt: truncated"), std::string::npos);
}

TEST_F(CheckpointDamage, AGarbledCheckpointFallsBackToThePreviousOne) {
  {
    std::fstream f(newest_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(newest_) / 2));
    f.put('\x5a');
    f.put('\xa5');
  }
  EXPECT_NE(ResumeExpecting(6).find("step-00000009.attempt-0.ckpt: checksum mismatch"),
            std::string::npos);
}

TEST_F(CheckpointDamage, EveryCheckpointUnreadableStartsAfresh) {
  for (const auto& name : CheckpointFiles(dir_)) {
    std::ofstream(dir_ + "/" + name, std::ios::trunc) << "garbage";
  }
  EXPECT_NE(ResumeExpecting(0).find("no header"), std::string::npos);
}

TEST_F(CheckpointDamage, AnotherRunsCheckpointIsNotResumed) {
  TrainConfig other = Job(OptimizerKind::kAdamW, dir_);
  other.seed = 10;
  const auto run = RunTraining(other);
  ASSERT_TRUE(run->status.ok());
  EXPECT_EQ(run->sink.run.resumed_from_step, 0);
  ASSERT_FALSE(run->sink.logs.empty());
  EXPECT_NE(run->sink.logs.front().find("belongs to another run (seed 9"), std::string::npos)
      << run->sink.logs.front();
}

// A job's checkpoints name it: another job (its directory copied, or a
// shared one) never resumes them, even on the same trajectory.
TEST_F(CheckpointDamage, AnotherJobsCheckpointIsNotResumed) {
  TrainConfig same = Job(OptimizerKind::kAdamW, dir_);
  same.job_id = "job-other";
  const auto run = RunTraining(same);
  ASSERT_TRUE(run->status.ok());
  EXPECT_EQ(run->sink.run.resumed_from_step, 0);
  ASSERT_FALSE(run->sink.logs.empty());
  EXPECT_NE(run->sink.logs.front().find("written by job job-written, not by job job-other"),
            std::string::npos)
      << run->sink.logs.front();
}

TEST(CheckpointRetention, KeepsTheNewestK) {
  const testing::TempDir temp;
  TrainConfig c = Job(OptimizerKind::kSgd, temp.path());
  c.checkpoint_every_steps = 1;
  c.checkpoint_keep = 2;
  ASSERT_TRUE(RunTraining(c)->status.ok());
  // Step 12 is the last: the output, not a checkpoint, records it.
  EXPECT_EQ(
      CheckpointFiles(temp.path()),
      (std::vector<std::string>{"step-00000010.attempt-0.ckpt", "step-00000011.attempt-0.ckpt"}));
}

}  // namespace
}  // namespace accumulus::engine
