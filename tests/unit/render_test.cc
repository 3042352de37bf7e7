// What the CLI prints: tables whose columns line up whatever the values,
// event lines that say what an event is (a superseded attempt's marked as
// such), a progress bar that stays in bounds, sizes in binary units.
#include "client/render.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "client/noise_advice.h"

namespace accumulus::client {
namespace {

// Each line as the characters a terminal shows (UTF-8 decoded into one
// string per character).
std::vector<std::vector<std::string>> Lines(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> shown;
    for (char c : line) {
      if ((static_cast<unsigned char>(c) & 0xC0) == 0x80 && !shown.empty()) {
        shown.back() += c;
      } else {
        shown.emplace_back(1, c);
      }
    }
    out.push_back(shown);
  }
  return out;
}

std::string Joined(const std::vector<std::string>& line) {
  std::string out;
  for (const std::string& c : line) out += c;
  return out;
}

// The column where `word` starts in `line`.
size_t ColumnOf(const std::vector<std::string>& line, const std::string& word) {
  for (size_t i = 0; i + word.size() <= line.size(); ++i) {
    bool match = true;
    for (size_t j = 0; j < word.size() && match; ++j)
      match = line[i + j] == std::string(1, word[j]);
    if (match) return i;
  }
  return std::string::npos;
}

TEST(Render, JobTableColumnsLineUpWhateverTheValues) {
  v1::ListJobsResponse jobs;
  v1::JobSummary* a = jobs.add_jobs();
  a->set_id("job-1");
  a->set_state(v1::JOB_STATE_RUNNING);
  a->set_name("x");
  a->set_steps_done(3);
  a->set_steps_total(40);
  a->set_worker_id("w1");
  a->set_owner("alice");
  v1::JobSummary* b = jobs.add_jobs();
  b->set_id("job-12345");
  b->set_state(v1::JOB_STATE_SUCCEEDED);
  b->set_name("a-much-longer-job-name");
  b->mutable_batch()->set_micro_batch(64);
  b->mutable_batch()->set_accumulation_steps(8);
  b->mutable_batch()->set_devices(2);
  b->mutable_batch()->set_global_batch(1024);
  b->set_loss(0.25);
  const auto lines = Lines(JobTable(jobs));
  ASSERT_EQ(lines.size(), 3u);
  for (const char* column : {"STATE", "NAME", "OWNER", "BATCH", "STEPS", "LOSS", "WORKER"}) {
    const size_t at = ColumnOf(lines[0], column);
    ASSERT_NE(at, std::string::npos) << column;
    for (size_t row = 1; row < lines.size(); ++row) {
      ASSERT_GT(lines[row].size(), at) << Joined(lines[row]);
      EXPECT_NE(lines[row][at], " ") << column << " of row " << row << ": " << Joined(lines[row]);
      EXPECT_EQ(lines[row][at - 1], " ")
          << column << " of row " << row << ": " << Joined(lines[row]);
    }
  }
  EXPECT_NE(Joined(lines[2]).find("1024 = 64×8×2"), std::string::npos) << Joined(lines[2]);
  EXPECT_NE(Joined(lines[2]).find("0.2500"), std::string::npos) << Joined(lines[2]);
  EXPECT_NE(Joined(lines[1]).find("3/40"), std::string::npos) << Joined(lines[1]);
  EXPECT_NE(Joined(lines[1]).find("alice"), std::string::npos) << Joined(lines[1]);
}

TEST(Render, WorkerTableShowsEachSlotAndItsJobAligned) {
  v1::ListWorkersResponse workers;
  v1::WorkerInfo* w = workers.add_workers();
  w->set_id("gpu-node-with-a-long-name");
  for (int i = 0; i < 2; ++i) {
    v1::Device* d = w->add_devices();
    d->set_kind(v1::DEVICE_KIND_CUDA);
    d->set_index(i);
    d->set_cores(8);
    d->set_memory_bytes(int64_t{141} << 30);
  }
  w->add_device_jobs("job-7");
  w->add_device_jobs("");
  const auto lines = Lines(WorkerTable(workers));
  ASSERT_EQ(lines.size(), 3u);
  const size_t device = ColumnOf(lines[0], "DEVICE");
  const size_t job = ColumnOf(lines[0], "JOB");
  EXPECT_EQ(ColumnOf(lines[1], "cuda:0"), device) << Joined(lines[1]);
  EXPECT_EQ(ColumnOf(lines[2], "cuda:1"), device) << Joined(lines[2]);
  EXPECT_EQ(ColumnOf(lines[1], "job-7"), job) << Joined(lines[1]);
  EXPECT_EQ(ColumnOf(lines[2], "free"), job) << Joined(lines[2]);
  EXPECT_NE(Joined(lines[1]).find("141.00 GiB"), std::string::npos) << Joined(lines[1]);
}

TEST(Render, ASupersededAttemptsEventIsMarkedAndOtherwiseTheSame) {
  v1::JobEvent event;
  event.mutable_step()->set_step(7);
  event.mutable_step()->set_steps_total(40);
  event.mutable_step()->set_loss(0.5);
  const std::string fresh = EventLine(event);
  EXPECT_EQ(fresh.rfind("step 7/40", 0), 0u) << fresh;
  event.set_stale(true);
  event.set_attempt(2);
  EXPECT_EQ(EventLine(event), "stale (attempt 2, superseded) " + fresh);
}

TEST(Render, ASplitChangeSaysWhichRankRunsWhatFromWhen) {
  v1::JobEvent event;
  v1::SplitChange* split = event.mutable_split();
  split->set_rank(1);
  split->set_step(4);
  split->set_micro_batch(16);
  split->set_accumulation_steps(4);
  split->set_reason("out of memory in step 4 at micro_batch 32");
  EXPECT_EQ(EventLine(event),
            "split rank 1 from step 4: micro_batch 16 × accumulation 4 (out of memory in step 4 "
            "at micro_batch 32)");
}

TEST(Render, ACheckpointSaysItsStepPathAndSize) {
  v1::JobEvent event;
  event.mutable_checkpoint()->set_step(3);
  event.mutable_checkpoint()->set_path("/shared/checkpoints/j1/step-3.ckpt");
  event.mutable_checkpoint()->set_bytes(2500000);
  event.mutable_checkpoint()->set_seconds(0.125);
  EXPECT_EQ(EventLine(event),
            "checkpoint after step 3: /shared/checkpoints/j1/step-3.ckpt (2.5 MB in 0.12 s)");
}

TEST(Render, ACheckpointNotWrittenIsAWarningThatSaysWhereARestartResumes) {
  v1::JobEvent event;
  v1::CheckpointFailed* failed = event.mutable_checkpoint_failed();
  failed->set_step(9);
  failed->set_reason("cannot write /ckpt/j1/.tmp-7: No space left on device");
  failed->set_resumes_after_step(6);
  EXPECT_EQ(EventLine(event),
            "warning: checkpoint after step 9 not written (cannot write /ckpt/j1/.tmp-7: No space "
            "left on device); training goes on, a restart resumes after step 6");
  failed->set_resumes_after_step(0);
  EXPECT_NE(EventLine(event).find("a restart resumes from the start"), std::string::npos);
}

TEST(Render, LogLinesStartWithTheirLevel) {
  v1::JobEvent event;
  event.mutable_log()->set_text("checkpoint after step 3");
  EXPECT_EQ(EventLine(event), "info: checkpoint after step 3");
  event.mutable_log()->set_level(v1::LogMessage::LEVEL_WARNING);
  EXPECT_EQ(EventLine(event), "warning: checkpoint after step 3");
  event.mutable_log()->set_level(v1::LogMessage::LEVEL_ERROR);
  EXPECT_EQ(EventLine(event), "error: checkpoint after step 3");
}

TEST(Render, ALogLineSaysWhenAndWhoseItIs) {
  v1::JobEvent event;
  event.mutable_time()->set_seconds(1796398201);  // 2026-12-04T15:30:01Z
  event.mutable_log()->set_level(v1::LogMessage::LEVEL_WARNING);
  event.mutable_log()->set_text("data\x1b[2J set");
  event.set_attempt(2);
  event.set_rank(1);
  event.set_rank_sequence(7);
  EXPECT_EQ(LogLine(event), "2026-12-04T15:30:01Z  attempt 2 rank 1  warning: data\\x1B[2J set");
  event.set_rank_sequence(0);  // the worker daemon's, for the attempt
  EXPECT_EQ(LogLine(event), "2026-12-04T15:30:01Z  attempt 2  warning: data\\x1B[2J set");
  event.set_attempt(0);
  EXPECT_EQ(LogLine(event), "2026-12-04T15:30:01Z  controller  warning: data\\x1B[2J set");
}

TEST(Render, AnErrorWithSeveralViolationsListsOnePerLine) {
  EXPECT_EQ(ErrorText(Status::NotFound("no job \"x\"")), "error: no job \"x\"\n");
  EXPECT_EQ(ErrorText(Status::InvalidFields({{"a", "a 1 is wrong"}})), "error: a 1 is wrong\n");
  EXPECT_EQ(ErrorText(Status::InvalidFields(
                {{"micro_batch", "micro_batch -1 must not be negative"},
                 {"optimizer.kind", "optimizer.kind \"x\e[2J\" is not one of \"sgd\""}})),
            "error: 2 problems:\n"
            "  micro_batch -1 must not be negative\n"
            "  optimizer.kind \"x\\x1B[2J\" is not one of \"sgd\"\n");
}

TEST(Render, JobDetailsShowTheLabelsInKeyOrder) {
  v1::Job job;
  (*job.mutable_spec()->mutable_labels())["team"] = "vision";
  (*job.mutable_spec()->mutable_labels())["sweep"] = "lr-0.1";
  EXPECT_NE(JobDetails(job).find("labels:       sweep=lr-0.1, team=vision\n"), std::string::npos)
      << JobDetails(job);
}

TEST(Render, JobDetailsCountAFilesSamplesOnlyOnceATrainerReadIt) {
  v1::Job job;
  job.mutable_spec()->mutable_data()->set_kind(v1::DATA_KIND_CSV);
  job.mutable_spec()->mutable_data()->set_task(v1::DATA_TASK_CLASSIFICATION);
  job.mutable_spec()->mutable_data()->set_path("/data/train.csv");
  EXPECT_NE(
      JobDetails(job).find("data:         csv classification, samples counted when a trainer reads "
                           "/data/train.csv\n"),
      std::string::npos)
      << JobDetails(job);
  job.mutable_runtime()->set_samples_per_epoch(1200);
  EXPECT_NE(JobDetails(job).find("data:         csv classification, 1200 samples\n"),
            std::string::npos)
      << JobDetails(job);
}

TEST(Render, JobDetailsCountTheRestartsSinceTheLastResume) {
  v1::Job job;
  job.mutable_spec()->set_max_restarts(2);
  job.set_attempt(4);
  const auto ended = [&](const std::string& reason, v1::FailureClass failure_class) {
    v1::Attempt* a = job.add_attempts();
    a->set_number(job.attempts_size());
    a->set_reason(reason);
    a->set_failure_class(failure_class);
    return a;
  };
  ended("rank 0: killed", v1::FAILURE_CLASS_UNSPECIFIED);
  ended("failed: rank 0: killed", v1::FAILURE_CLASS_UNSPECIFIED)->set_resumed_by_request(true);
  ended("worker w1 is shutting down", v1::FAILURE_CLASS_PREEMPTED);
  const std::string details = JobDetails(job);
  EXPECT_NE(details.find("attempt:      4 (restarts spent: 0 of 2)\n"
                         "  attempt 1 ended after step 0: rank 0: killed\n"
                         "  attempt 2 ended after step 0: failed: rank 0: killed; resumed by "
                         "request (restarts afresh)\n"
                         "  attempt 3 ended after step 0 (preempted): worker w1 is shutting down "
                         "(no restart spent)\n"),
            std::string::npos)
      << details;
}

TEST(Render, SizesAreInBinaryUnits) {
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1024), "1.0 KiB");
  EXPECT_EQ(HumanBytes(3 * 1024 * 1024 / 2), "1.5 MiB");
  EXPECT_EQ(HumanBytes(int64_t{5} << 30), "5.00 GiB");
}

}  // namespace
}  // namespace accumulus::client

namespace accumulus::client {
namespace {

v1::StepMetrics StepWithNoise(double noise_scale, bool tokens) {
  v1::StepMetrics step;
  step.set_step(40);
  step.set_steps_total(100);
  step.set_samples(512);
  step.set_effective_batch(512);
  step.set_tokens(tokens ? 512 * 60 : 0);
  step.mutable_noise()->set_noise_scale(noise_scale);
  step.mutable_noise()->set_tokens(tokens);
  return step;
}

TEST(Render, AStepLineShowsTheNoiseScaleBesideTheGlobalBatch) {
  v1::JobEvent event;
  *event.mutable_step() = StepWithNoise(1900, false);
  const std::string line = EventLine(event);
  EXPECT_NE(line.find("512/512 samples  B_noise 1.9k  "), std::string::npos) << line;
  *event.mutable_step() = StepWithNoise(115000, true);
  EXPECT_NE(EventLine(event).find("B_noise 115k tokens"), std::string::npos) << EventLine(event);
  event.mutable_step()->clear_noise();
  EXPECT_EQ(EventLine(event).find("B_noise"), std::string::npos);
}

TEST(Render, ABatchChangeSaysFromWhenWhatAndWhy) {
  v1::JobEvent event;
  v1::BatchChange* change = event.mutable_batch_change();
  change->set_step(21);
  change->set_previous_global_batch(128);
  change->set_global_batch(256);
  change->set_accumulation_steps(8);
  change->set_lr(0.2);
  change->set_reason("the noise scale is 900");
  EXPECT_EQ(
      EventLine(event),
      "batch from step 21: global 128 → 256 (accumulation 8), lr 0.2: the noise scale is 900");
}

v1::BatchPlan Plan(int64_t micro, int64_t accumulation, int32_t devices) {
  v1::BatchPlan plan;
  plan.set_micro_batch(micro);
  plan.set_accumulation_steps(accumulation);
  plan.set_devices(devices);
  plan.set_global_batch(micro * accumulation * devices);
  return plan;
}

TEST(NoiseScaleAdvice, SaysHowFarTheBatchIsFromTheNoiseScaleAndWhatWouldReachIt) {
  EXPECT_EQ(NoiseScaleAdvice(Plan(64, 8, 1), StepWithNoise(1900, false)),
            "global batch 512 is 0.27× the measured noise scale 1.9k samples: accumulation 30 at "
            "micro 64 would reach it");
  EXPECT_EQ(NoiseScaleAdvice(Plan(64, 8, 4), StepWithNoise(1100, false)),
            "global batch 2048 is 1.9× the measured noise scale 1.1k samples: near it, where a "
            "step's samples are used best");
  EXPECT_EQ(NoiseScaleAdvice(Plan(64, 16, 4), StepWithNoise(1000, false)),
            "global batch 4096 is 4.1× the measured noise scale 1k samples: steps this large gain "
            "little over smaller ones; accumulation 4 at micro 64 × 4 devices would match it");
  EXPECT_EQ(NoiseScaleAdvice(Plan(64, 8, 1), v1::StepMetrics()), "");
}

TEST(NoiseScaleAdvice, ComparesATokenModelsBatchInTokens) {
  // 60 tokens per sample: 115k tokens are about 1917 samples.
  EXPECT_EQ(NoiseScaleAdvice(Plan(64, 8, 1), StepWithNoise(115000, true)),
            "global batch 512 (30.7k tokens) is 0.27× the measured noise scale 115k tokens: "
            "accumulation 30 at micro 64 would reach it");
}

}  // namespace
}  // namespace accumulus::client
