// Data-parallel trainers (separate processes, c10d Gloo on loopback): the
// same parameters as one rank with the same global batch, one all-reduce
// pass per window, and no hang when a rank dies.
#include <gtest/gtest.h>
#include <signal.h>
#include <torch/torch.h>

#include <thread>

#include "common/enum_names.h"
#include "tests/support/engine_test_support.h"
#include "tests/support/free_port.h"
#include "tests/support/test_cluster.h"
#include "worker/engine/state_dict.h"
#include "worker/engine/thread_setup.h"
#include "worker/engine/thread_split.h"
#include "worker/trainer_process.h"

namespace accumulus::testing {
namespace {

struct RankRun {
  v1::RuntimeInfo runtime;
  std::vector<v1::StepMetrics> steps;
  v1::TrainerExit exit;
  Subprocess::ExitInfo process;
};

class DataParallelTest : public ::testing::Test {
 protected:
  v1::JobSpec Spec(int64_t micro, int64_t accumulation, int devices, const std::string& optimizer) {
    v1::JobSpec spec;
    spec.mutable_model()->set_kind(v1::MODEL_KIND_MLP);
    spec.mutable_model()->add_hidden(16);
    spec.mutable_data()->set_samples(100);  // windows of 32: three full, one of 4
    spec.mutable_data()->set_features(6);
    spec.mutable_data()->set_outputs(3);
    spec.set_micro_batch(micro);
    spec.set_accumulation_steps(accumulation);
    spec.set_devices(devices);
    spec.mutable_optimizer()->set_kind(*ValueNamed<v1::OptimizerKind>(optimizer));
    spec.mutable_optimizer()->set_lr(optimizer == "sgd" ? 0.1 : 0.01);
    if (optimizer == "sgd") spec.mutable_optimizer()->set_momentum(0.9);
    spec.mutable_optimizer()->set_weight_decay(0.01);
    spec.set_epochs(2);
    spec.set_seed(21);
    spec.set_collective_timeout_seconds(20);
    spec.set_output(dir_ + "/out-" + std::to_string(++runs_) + ".pt");
    return spec;
  }

  // Runs every rank of `spec` as its own trainer process; `on_step` may
  // act on a rank's step reports as they arrive.
  using OnStep = std::function<void(int rank, int64_t step, worker::TrainerProcess*)>;
  // `edit_task` may change a rank's task before it starts (its threads).
  using EditTask = std::function<void(v1::TrainerTask*)>;
  std::vector<RankRun> Run(const v1::JobSpec& spec, OnStep on_step = {}, EditTask edit_task = {}) {
    const int world = spec.devices();
    const int port = FreeLoopbackPort();
    std::vector<std::unique_ptr<worker::TrainerProcess>> trainers;
    for (int rank = 0; rank < world; ++rank) {
      v1::TrainerTask task;
      task.set_job_id("dp");
      *task.mutable_spec() = spec;
      task.mutable_batch()->set_micro_batch(spec.micro_batch());
      task.set_rank(rank);
      task.set_world_size(world);
      task.set_intra_op_threads(1);
      task.set_blas_threads(1);
      task.set_device("cpu");
      task.set_rendezvous_host("127.0.0.1");
      task.set_rendezvous_port(port);
      task.set_local_address("127.0.0.1");
      if (edit_task) edit_task(&task);
      worker::TrainerProcess::Options options;
      options.binary = BinaryDir() + "/accumulus-trainer";
      options.log_path = dir_ + "/rank-" + std::to_string(rank) + ".log";
      auto trainer = worker::TrainerProcess::Spawn(options, task);
      EXPECT_TRUE(trainer.ok()) << trainer.status().ToString();
      trainers.push_back(std::move(*trainer));
    }
    std::vector<RankRun> runs(static_cast<size_t>(world));
    std::vector<std::thread> readers;
    for (int rank = 0; rank < world; ++rank) {
      readers.emplace_back([&, rank] {
        RankRun& run = runs[static_cast<size_t>(rank)];
        worker::TrainerProcess* trainer = trainers[static_cast<size_t>(rank)].get();
        (void)trainer->ReadMessages([&](const v1::TrainerMessage& m) {
          for (const v1::JobEvent& e : m.events().events()) {
            if (e.has_runtime()) run.runtime = e.runtime();
            if (e.has_step()) {
              run.steps.push_back(e.step());
              if (on_step) on_step(rank, e.step().step(), trainer);
            }
          }
          if (m.has_exit()) run.exit = m.exit();
        });
        run.process = trainer->Wait();
      });
    }
    for (auto& t : readers) t.join();
    return runs;
  }

  std::vector<torch::Tensor> Output(const v1::JobSpec& spec) {
    auto dict = engine::LoadStateDict(spec.output());
    EXPECT_TRUE(dict.ok()) << dict.status().ToString();
    std::vector<torch::Tensor> out;
    if (dict.ok()) {
      for (auto& [name, tensor] : *dict) out.push_back(tensor);
    }
    return out;
  }

  const testing::TempDir temp_;
  const std::string dir_ = temp_.path();
  int runs_ = 0;
};

class DataParallelEquivalence : public DataParallelTest,
                                public ::testing::WithParamInterface<std::string> {};

TEST_P(DataParallelEquivalence, TwoRanksMatchOneRankWithTheSameGlobalBatch) {
  const v1::JobSpec two_ranks = Spec(4, 4, 2, GetParam());     // 4 × 4 × 2 = 32
  const v1::JobSpec double_micro = Spec(8, 4, 1, GetParam());  // 8 × 4 × 1 = 32
  const v1::JobSpec one_batch = Spec(32, 1, 1, GetParam());    // 32 × 1 × 1
  for (const v1::JobSpec* spec : {&two_ranks, &double_micro, &one_batch}) {
    for (const RankRun& rank : Run(*spec)) {
      ASSERT_EQ(rank.exit.state(), v1::JOB_STATE_SUCCEEDED) << rank.exit.reason();
    }
  }
  const auto reference = Output(one_batch);
  EXPECT_LE(MaxRelativeDifference(Output(two_ranks), reference), 1e-5);
  EXPECT_LE(MaxRelativeDifference(Output(double_micro), reference), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, DataParallelEquivalence, ::testing::Values("sgd", "adamw"));

// Ranks measure their thread split each on its own, but train on rank 0's;
// ranks whose threads were given (another worker's flags) still join the
// agreement, so a mixed job starts instead of waiting on a collective.
TEST_F(DataParallelTest, RanksThatMeasureTheirThreadSplitTakeRankZerosAndMixedRanksStillStart) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: nothing to split";
  auto measure = [](v1::TrainerTask* task) {
    task->set_intra_op_threads(0);
    task->set_blas_threads(0);
    task->set_cores(2);
  };
  const std::vector<RankRun> both = Run(Spec(4, 4, 2, "sgd"), {}, measure);
  for (const RankRun& r : both) {
    ASSERT_EQ(r.exit.state(), v1::JOB_STATE_SUCCEEDED) << r.exit.reason();
    EXPECT_EQ(r.runtime.threads_source(), v1::THREADS_SOURCE_MEASURED);
    EXPECT_EQ(
        r.runtime.thread_trials_size(),
        static_cast<int>(engine::CandidateThreadSplits(2, engine::BlasSharesIntraOpPool()).size()));
  }
  EXPECT_EQ(both[1].runtime.intra_op_threads(), both[0].runtime.intra_op_threads());
  EXPECT_EQ(both[1].runtime.blas_threads(), both[0].runtime.blas_threads());

  const std::vector<RankRun> mixed = Run(Spec(4, 4, 2, "sgd"), {}, [&](v1::TrainerTask* task) {
    if (task->rank() == 1) measure(task);
  });
  for (const RankRun& r : mixed) {
    ASSERT_EQ(r.exit.state(), v1::JOB_STATE_SUCCEEDED) << r.exit.reason();
  }
  EXPECT_EQ(mixed[0].runtime.threads_source(), v1::THREADS_SOURCE_GIVEN);
  EXPECT_EQ(mixed[0].runtime.intra_op_threads(), 1);
  EXPECT_EQ(mixed[1].runtime.threads_source(), v1::THREADS_SOURCE_MEASURED);
}

TEST_F(DataParallelTest, ReportsGlobalCountsAndLossOnEveryRank) {
  const std::vector<RankRun> ranks = Run(Spec(4, 4, 2, "sgd"));
  const std::vector<RankRun> single = Run(Spec(32, 1, 1, "sgd"));
  ASSERT_EQ(ranks[0].steps.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    const bool short_window = i % 4 == 3;  // 4 samples: all on rank 0
    for (const RankRun& r : ranks) {
      EXPECT_EQ(r.steps[i].samples(), short_window ? 4 : 32);
      EXPECT_NEAR(r.steps[i].loss(), single[0].steps[i].loss(), 1e-5);
    }
    EXPECT_EQ(ranks[1].steps[i].microbatches(), short_window ? 0 : 4);
  }
}

TEST_F(DataParallelTest, OneAllReducePassPerWindowWhateverTheAccumulation) {
  v1::JobSpec few = Spec(4, 1, 2, "sgd");
  v1::JobSpec many = Spec(4, 8, 2, "sgd");
  const std::vector<RankRun> k1 = Run(few);
  const std::vector<RankRun> k8 = Run(many);
  ASSERT_FALSE(k8[0].steps.empty());
  // One bucket (the model is far below 25 MB) plus the window's counters.
  for (const auto* run : {&k1, &k8}) {
    for (const RankRun& rank : *run) {
      for (const v1::StepMetrics& step : rank.steps) {
        EXPECT_EQ(step.allreduce_calls(), 2) << "step " << step.step();
        EXPECT_GT(step.allreduce_bytes(), 0);
      }
    }
  }
}

TEST_F(DataParallelTest, SmallBucketsSplitTheReduceButNotPerMicroBatch) {
  v1::JobSpec spec = Spec(4, 8, 2, "sgd");
  spec.set_bucket_megabytes(100.0 / (1024 * 1024));  // 100 bytes: one gradient per bucket
  const std::vector<RankRun> ranks = Run(spec);
  // mlp 6-16-3: four parameter tensors, each its own bucket, plus counters.
  for (const v1::StepMetrics& step : ranks[0].steps) EXPECT_EQ(step.allreduce_calls(), 5);
}

TEST_F(DataParallelTest, ARankThatDiesFailsTheOtherWithinTheCollectiveTimeout) {
  v1::JobSpec spec = Spec(4, 4, 2, "sgd");
  spec.set_epochs(100000);
  spec.set_collective_timeout_seconds(3);
  const std::vector<RankRun> ranks = Run(spec, [](int rank, int64_t, worker::TrainerProcess* t) {
    if (rank == 1) t->Signal(SIGKILL);
  });
  EXPECT_EQ(ranks[1].process.signal, SIGKILL);
  EXPECT_EQ(ranks[0].exit.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(ranks[0].exit.failure_class(), v1::FAILURE_CLASS_COLLECTIVE) << ranks[0].exit.reason();
  EXPECT_FALSE(ranks[0].exit.permanent()) << "a lost peer may be back on a retry";
  EXPECT_FALSE(ranks[0].exit.reason().empty());
}

// Elastic resume: a 2-rank job killed after its checkpoint at step 4 resumes
// on one rank with twice the accumulation (the same global batch, so the same
// windows) and ends where the uninterrupted 2-rank run ends.
TEST_F(DataParallelTest, ResumesOnFewerRanksWithTheSameGlobalBatch) {
  const v1::JobSpec reference = Spec(4, 4, 2, "adamw");  // 8 steps of 32
  for (const RankRun& rank : Run(reference)) {
    ASSERT_EQ(rank.exit.state(), v1::JOB_STATE_SUCCEEDED) << rank.exit.reason();
  }

  v1::JobSpec two = Spec(4, 4, 2, "adamw");
  two.mutable_checkpoint()->set_dir(dir_ + "/checkpoints");
  two.mutable_checkpoint()->set_every_steps(2);
  const std::vector<RankRun> killed = Run(two, [](int, int64_t step, worker::TrainerProcess* t) {
    // Each rank dies once it has reported step 5 (the checkpoint after step
    // 4 is on disk by then: rank 0 writes it before training step 5).
    if (step == 5) t->Signal(SIGKILL);
  });
  for (const RankRun& rank : killed) EXPECT_EQ(rank.process.signal, SIGKILL);

  v1::JobSpec one = Spec(4, 8, 1, "adamw");  // 4 × 8 × 1 = 32
  *one.mutable_checkpoint() = two.checkpoint();
  one.set_output(two.output());
  const std::vector<RankRun> resumed = Run(one);
  ASSERT_EQ(resumed[0].exit.state(), v1::JOB_STATE_SUCCEEDED) << resumed[0].exit.reason();
  ASSERT_FALSE(resumed[0].steps.empty());
  // Step 4's checkpoint at least (6's if a rank got that far before dying).
  EXPECT_GE(resumed[0].runtime.resumed_from_step(), 4);
  EXPECT_EQ(resumed[0].steps.front().step(), resumed[0].runtime.resumed_from_step() + 1)
      << "no step applied twice or skipped";
  for (const auto& s : resumed[0].steps) {
    EXPECT_EQ(s.effective_batch(), 32) << "step " << s.step();
    // Each epoch's last window holds the 4 remaining samples: one micro-batch.
    EXPECT_EQ(s.microbatches(), s.samples() == 32 ? 8 : 1) << "step " << s.step();
  }
  EXPECT_EQ(resumed[0].steps.back().step(), 8);
  EXPECT_LE(MaxRelativeDifference(Output(one), Output(reference)), 1e-5);
}

}  // namespace
}  // namespace accumulus::testing
