// Checkpoints fenced by attempt: each attempt resumes from what its
// predecessors left on the job's history, a superseded attempt (one still
// running after its successor started) writes no checkpoint and no output,
// and a checkpoint it slipped in anyway is never resumed from.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "tests/support/engine_test_support.h"
#include "tests/support/read_file.h"
#include "worker/engine/checkpoint_lineage.h"
#include "worker/engine/trainer.h"

namespace accumulus::engine {
namespace {

namespace fs = std::filesystem;
using testing::BitIdentical;
using testing::RunTraining;

TrainConfig Job(const std::string& dir, int64_t attempt) {
  TrainConfig c;
  c.model.hidden = {16};
  c.data.samples = 96;
  c.data.features = 8;
  c.data.outputs = 3;
  c.data.seed = 4;
  c.optimizer.kind = OptimizerKind::kAdamW;
  c.optimizer.lr = 0.01;
  c.micro_batch = 4;
  c.accumulation_steps = 2;
  c.global_batch = 8;
  c.epochs = 1;  // 12 steps
  c.seed = 9;
  c.checkpoint_dir = dir;
  c.checkpoint_every_steps = 3;
  c.attempt = attempt;
  return c;
}

// Dies in `step`'s window, as a killed trainer would.
TrainOptions DiesIn(int64_t step) {
  TrainOptions options;
  options.after_backward = [step](int64_t s, const std::vector<torch::Tensor>&) {
    if (s == step) throw std::runtime_error("killed");
  };
  return options;
}

class CheckpointFencing : public ::testing::Test {
 protected:
  const testing::TempDir temp_;
  const std::string dir_ = temp_.path() + "/job";
};

TEST_F(CheckpointFencing, EachAttemptContinuesFromItsPredecessorsCheckpoint) {
  const auto reference = RunTraining(Job("", 1));
  ASSERT_TRUE(reference->status.ok()) << reference->status.ToString();
  ASSERT_FALSE(RunTraining(Job(dir_, 1), DiesIn(8))->status.ok());
  ASSERT_FALSE(RunTraining(Job(dir_, 2), DiesIn(11))->status.ok());
  EXPECT_TRUE(fs::exists(dir_ + "/step-00000009.attempt-2.ckpt"));
  const auto third = RunTraining(Job(dir_, 3));
  ASSERT_TRUE(third->status.ok()) << third->status.ToString();
  EXPECT_EQ(third->sink.run.resumed_from_step, 9);
  EXPECT_NE(third->Logs().find("resuming after step 9 from a checkpoint of attempt 2"),
            std::string::npos)
      << third->Logs();
  EXPECT_TRUE(BitIdentical(third->parameters, reference->parameters));

  StatusOr<CheckpointLineage> lineage = CheckpointLineage::Read(dir_);
  ASSERT_TRUE(lineage.ok()) << lineage.status().ToString();
  ASSERT_EQ(lineage->entries().size(), 3u);
  EXPECT_EQ(lineage->entries()[1].attempt, 2);
  EXPECT_EQ(lineage->entries()[1].resumed_after_step, 6);
  EXPECT_EQ(lineage->entries()[1].from_attempt, 1);
  EXPECT_EQ(lineage->entries()[2].resumed_after_step, 9);
  EXPECT_EQ(lineage->entries()[2].from_attempt, 2);
}

// Attempt 1 froze after its checkpoint of step 6; attempt 2 resumed from it
// and died; attempt 1 thawed and, before its lease stopped it, wrote its
// checkpoint of step 9. Attempt 3 resumes from step 6, not from the
// superseded attempt's step 9.
TEST_F(CheckpointFencing, ASupersededAttemptsCheckpointIsNeverResumed) {
  const auto reference = RunTraining(Job("", 1));
  ASSERT_FALSE(RunTraining(Job(dir_, 1), DiesIn(8))->status.ok());
  ASSERT_FALSE(RunTraining(Job(dir_, 2), DiesIn(7))->status.ok());
  // The same run's real checkpoint of step 9 by attempt 1, made elsewhere.
  const std::string elsewhere = temp_.path() + "/elsewhere";
  ASSERT_FALSE(RunTraining(Job(elsewhere, 1), DiesIn(10))->status.ok());
  fs::copy_file(elsewhere + "/step-00000009.attempt-1.ckpt",
                dir_ + "/step-00000009.attempt-1.ckpt");

  const auto third = RunTraining(Job(dir_, 3));
  ASSERT_TRUE(third->status.ok()) << third->status.ToString();
  EXPECT_EQ(third->sink.run.resumed_from_step, 6);
  EXPECT_NE(third->Logs().find("step-00000009.attempt-1.ckpt: written by attempt 1 after its "
                               "successor resumed after step 6 (a superseded attempt's)"),
            std::string::npos)
      << third->Logs();
  EXPECT_TRUE(BitIdentical(third->parameters, reference->parameters));
}

TEST_F(CheckpointFencing, ASupersededAttemptWritesNoCheckpoint) {
  TrainOptions options;
  options.after_backward = [this](int64_t step, const std::vector<torch::Tensor>&) {
    if (step == 2) {  // attempt 2 starts
      ASSERT_TRUE(CheckpointLineage::Append(dir_, {2, 0, 0}).ok());
    }
  };
  const auto first = RunTraining(Job(dir_, 1), options);
  EXPECT_EQ(first->status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(first->status.message().find("checkpoint after step 3: attempt 1 is superseded by "
                                         "attempt 2 (" +
                                         dir_ +
                                         "/lineage): its checkpoint after "
                                         "step 3 is not written"),
            std::string::npos)
      << first->status.message();
  EXPECT_FALSE(fs::exists(dir_ + "/step-00000003.attempt-1.ckpt"));
}

TEST_F(CheckpointFencing, ASupersededAttemptDoesNotReplaceTheOutput) {
  const std::string output = temp_.path() + "/final.pt";
  std::ofstream(output) << "the successor's output";
  TrainConfig c = Job(dir_, 1);
  c.checkpoint_every_steps = 0;
  c.output_path = output;
  TrainOptions options;
  options.after_backward = [this](int64_t step, const std::vector<torch::Tensor>&) {
    if (step == 12) {
      ASSERT_TRUE(CheckpointLineage::Append(dir_, {2, 0, 0}).ok());
    }
  };
  const auto first = RunTraining(c, options);
  EXPECT_EQ(first->status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(first->status.message().find("its output " + output + " is not replaced"),
            std::string::npos)
      << first->status.message();
  EXPECT_EQ(testing::ReadFile(output), "the successor's output");
  EXPECT_FALSE(fs::exists(output + ".attempt-1.tmp")) << "its own file is removed";

  // Unsuperseded, the output is replaced whole.
  TrainConfig second = c;
  second.attempt = 2;
  const auto run = RunTraining(second);
  ASSERT_TRUE(run->status.ok()) << run->status.ToString();
  EXPECT_NE(testing::ReadFile(output), "the successor's output");
  EXPECT_FALSE(fs::exists(output + ".attempt-2.tmp"));
}

TEST_F(CheckpointFencing, ASupersededAttemptDoesNotStart) {
  ASSERT_TRUE(CheckpointLineage::Append(dir_, {3, 0, 0}).ok());
  const auto second = RunTraining(Job(dir_, 2));
  EXPECT_EQ(second->status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second->status.message().find("attempt 2 is superseded by attempt 3"),
            std::string::npos)
      << second->status.message();
  EXPECT_TRUE(second->sink.steps.empty());
}

TEST(CheckpointLineage, TheHistoryFollowsWhoseCheckpointEachStartResumedFrom) {
  const testing::TempDir temp;
  // Attempt 2 resumed after step 6 of attempt 1 and died before its first
  // checkpoint; attempt 3 resumed from the same one.
  for (const LineageEntry& e : {LineageEntry{1, 0, 0}, {2, 6, 1}, {3, 6, 1}}) {
    ASSERT_TRUE(CheckpointLineage::Append(temp.path(), e).ok());
  }
  StatusOr<CheckpointLineage> lineage = CheckpointLineage::Read(temp.path());
  ASSERT_TRUE(lineage.ok());
  std::string why;
  EXPECT_TRUE(lineage->Allows(1, 6, &why));
  EXPECT_TRUE(lineage->Allows(3, 9, &why));
  EXPECT_FALSE(lineage->Allows(1, 9, &why));
  EXPECT_NE(why.find("after its successor resumed after step 6"), std::string::npos) << why;
  EXPECT_FALSE(lineage->Allows(2, 9, &why));
  EXPECT_NE(why.find("attempt 2 is not in the history"), std::string::npos) << why;
  EXPECT_EQ(lineage->NewestAbove(2), 3);
  EXPECT_EQ(lineage->NewestAbove(3), 0);
}

TEST(CheckpointLineage, CheckpointsFromBeforeTheLineageCountUpToTheFirstResume) {
  const testing::TempDir temp;
  ASSERT_TRUE(CheckpointLineage::Append(temp.path(), {4, 6, 0}).ok());
  StatusOr<CheckpointLineage> lineage = CheckpointLineage::Read(temp.path());
  ASSERT_TRUE(lineage.ok());
  std::string why;
  EXPECT_TRUE(lineage->Allows(0, 6, &why));
  EXPECT_FALSE(lineage->Allows(0, 9, &why));
  EXPECT_TRUE(lineage->Allows(4, 9, &why));
}

TEST(CheckpointLineage, ALineThatDoesNotParseIsNamedNeverQuoted) {
  const testing::TempDir temp;
  std::ofstream(temp.path() + "/lineage") << "attempt 1 resumed_after_step 0 from_attempt 0\n"
                                          << "attempt 2 resumed_after_step six secret\n";
  StatusOr<CheckpointLineage> lineage = CheckpointLineage::Read(temp.path());
  ASSERT_FALSE(lineage.ok());
  EXPECT_EQ(lineage.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(lineage.status().message().find(temp.path() + "/lineage line 2: expected"),
            std::string::npos)
      << lineage.status().message();
  EXPECT_EQ(lineage.status().message().find("secret"), std::string::npos);
}

}  // namespace
}  // namespace accumulus::engine
