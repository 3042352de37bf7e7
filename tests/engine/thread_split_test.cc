// Each CPU rank measures how to split its cores between LibTorch's intra-op
// pool and the BLAS on its own micro-batch: the measurement picks the faster
// split, leaves it in force, and leaves no trace in the run it precedes.
#include "worker/engine/thread_split.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/support/engine_test_support.h"
#include "worker/engine/checkpoint.h"
#include "worker/engine/thread_setup.h"
#include "worker/engine/trainer.h"

namespace accumulus::engine {
namespace {

using Sink = testing::RecordingSink;
using testing::TrainAndCollect;

// Restores the test process's thread counts after a test that changes them.
class ThreadSplitTest : public ::testing::Test {
 protected:
  void SetUp() override { intra_op_ = at::get_num_threads(); }
  void TearDown() override { SetThreadCounts(intra_op_, 1); }
  int intra_op_ = 1;
};

TEST(CandidateThreadSplits, GiveAllCoresToOnePoolOrTheOther) {
  EXPECT_EQ(CandidateThreadSplits(1, false), (std::vector<ThreadSplit>{{1, 1}}));
  EXPECT_EQ(CandidateThreadSplits(2, false), (std::vector<ThreadSplit>{{2, 1}, {1, 2}}));
  EXPECT_EQ(CandidateThreadSplits(8, false), (std::vector<ThreadSplit>{{8, 1}, {1, 8}}));
  // A BLAS on LibTorch's own threads: every core to both is a candidate too.
  EXPECT_EQ(CandidateThreadSplits(1, true), (std::vector<ThreadSplit>{{1, 1}}));
  EXPECT_EQ(CandidateThreadSplits(8, true), (std::vector<ThreadSplit>{{8, 1}, {1, 8}, {8, 8}}));
}

TEST(Fastest, TakesTheHighestRateAndTheFirstOnATie) {
  EXPECT_EQ(Fastest({{{2, 1}, 10}, {{1, 2}, 30}}), (ThreadSplit{1, 2}));
  EXPECT_EQ(Fastest({{{2, 1}, 30}, {{1, 2}, 30}}), (ThreadSplit{2, 1}));
}

TEST_F(ThreadSplitTest, MeasuresEachCandidateAndLeavesTheFastestInForce) {
  // A pass whose cost depends on the split in force: ten times the work
  // under one intra-op thread.
  volatile double sink = 0;
  auto pass = [&] {
    const int64_t work = at::get_num_threads() == 1 ? 2000000 : 200000;
    for (int64_t i = 0; i < work; ++i) sink = sink + 1e-9 * static_cast<double>(i);
  };
  const std::vector<ThreadTrial> trials =
      MeasureThreadSplits({{1, 1}, {2, 1}}, 8, pass, /*min_seconds=*/0.02,
                          /*warmup_seconds=*/0.0);
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].split, (ThreadSplit{1, 1}));
  EXPECT_EQ(trials[1].split, (ThreadSplit{2, 1}));
  EXPECT_GT(trials[1].samples_per_second, 3 * trials[0].samples_per_second);
  EXPECT_EQ(at::get_num_threads(), 2);
}

TEST_F(ThreadSplitTest, ABurstThatSlowsOneRoundDoesNotDecideTheSplit) {
  // Two intra-op threads do a tenth of the work, except that their whole
  // first round runs into a neighbour's burst (fifty times the work). A
  // round starts where the thread count changes to 2, so the burst covers
  // one round however long the machine takes for a pass.
  volatile double sink = 0;
  int rounds_at_two = 0;
  int previous_threads = 0;
  auto pass = [&] {
    const int threads = at::get_num_threads();
    if (threads == 2 && previous_threads != 2) ++rounds_at_two;
    previous_threads = threads;
    int64_t work = 2000000;
    if (threads == 2) work = rounds_at_two == 1 ? 10000000 : 200000;
    for (int64_t i = 0; i < work; ++i) sink = sink + 1e-9 * static_cast<double>(i);
  };
  const std::vector<ThreadTrial> trials =
      MeasureThreadSplits({{1, 1}, {2, 1}}, 8, pass, /*min_seconds=*/0.3,
                          /*warmup_seconds=*/0.0, /*rounds=*/3);
  // (min_seconds is long against a pass, ~3 ms, so that a pass descheduled
  // on a loaded machine is not taken for a pass long enough for one round.)
  EXPECT_GT(trials[1].samples_per_second, 3 * trials[0].samples_per_second);
  EXPECT_EQ(at::get_num_threads(), 2);
}

TEST_F(ThreadSplitTest, APassLongerThanARoundGetsOneRound) {
  int passes = 0;
  auto pass = [&] { ++passes; };
  // min_seconds 0: every pass is "long enough", so each candidate runs one
  // untimed and one timed pass.
  MeasureThreadSplits({{1, 1}, {2, 1}}, 8, pass, /*min_seconds=*/0.0, /*warmup_seconds=*/0.0,
                      /*rounds=*/3);
  EXPECT_EQ(passes, 4);
}

TrainConfig BatchNormCnn() {
  TrainConfig c;
  c.model.kind = ModelKind::kCnn;
  c.model.hidden = {8, 16};
  c.model.batch_norm = true;
  c.data.task = DataTask::kImageClassification;
  c.data.channels = 3;
  c.data.image_size = 8;
  c.data.outputs = 4;
  c.data.samples = 64;
  c.optimizer.lr = 0.05;
  c.optimizer.momentum = 0.9;
  c.micro_batch = 8;
  c.accumulation_steps = 2;
  c.epochs = 1;  // 4 steps
  c.seed = 3;
  return c;
}

TEST_F(ThreadSplitTest, ARunThatMeasuresTrainsBitIdenticallyToOneGivenTheChosenSplit) {
  TrainConfig measuring = BatchNormCnn();
  measuring.measure_thread_split_cores = 2;
  Sink a;
  const std::vector<torch::Tensor> pa = TrainAndCollect(measuring, &a);
  ASSERT_EQ(a.run.thread_trials.size(), CandidateThreadSplits(2, BlasSharesIntraOpPool()).size());
  for (const ThreadTrial& t : a.run.thread_trials) EXPECT_GT(t.samples_per_second, 0);
  EXPECT_EQ(a.run.threads, Fastest(a.run.thread_trials));
  EXPECT_EQ(at::get_num_threads(), a.run.threads.intra_op);

  // The same split, given: the measuring passes changed nothing the run
  // depends on (BatchNorm statistics, the generator, gradients).
  SetThreadCounts(a.run.threads.intra_op, a.run.threads.blas);
  Sink b;
  const std::vector<torch::Tensor> pb = TrainAndCollect(BatchNormCnn(), &b);
  EXPECT_TRUE(b.run.thread_trials.empty());
  EXPECT_EQ(b.run.threads, (ThreadSplit{}));
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << i;
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) EXPECT_EQ(a.steps[i].loss, b.steps[i].loss);
}

TEST_F(ThreadSplitTest, AResumedRunKeepsTheSplitItsCheckpointRecorded) {
  testing::TempDir dir;
  TrainConfig c = BatchNormCnn();
  c.measure_thread_split_cores = 2;
  c.checkpoint_dir = dir.path();
  c.checkpoint_every_steps = 2;
  c.max_steps = 3;  // a checkpoint after step 2
  Sink first;
  TrainAndCollect(c, &first);
  ASSERT_EQ(first.run.thread_trials.size(),
            CandidateThreadSplits(2, BlasSharesIntraOpPool()).size());
  const ThreadSplit measured = first.run.threads;

  // Whatever is in force now, the resumed run takes the recorded split.
  const ThreadSplit other = measured == ThreadSplit{2, 1} ? ThreadSplit{1, 2} : ThreadSplit{2, 1};
  SetThreadCounts(other.intra_op, other.blas);
  c.max_steps = 0;
  Sink resumed;
  TrainAndCollect(c, &resumed);
  EXPECT_EQ(resumed.run.resumed_from_step, 2);
  EXPECT_TRUE(resumed.run.thread_trials.empty());
  EXPECT_EQ(resumed.run.threads, measured);
  EXPECT_EQ(at::get_num_threads(), measured.intra_op);
}

}  // namespace
}  // namespace accumulus::engine
