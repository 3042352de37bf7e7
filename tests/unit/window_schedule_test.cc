#include "common/window_schedule.h"

#include <gtest/gtest.h>

#include <random>

#include "common/batch_arithmetic.h"

namespace accumulus {
namespace {

WindowScheduleConfig Config(PartialWindow policy, int64_t samples = 100, int64_t epochs = 2) {
  WindowScheduleConfig c;
  c.samples_per_epoch = samples;
  c.micro_batch = 8;
  c.accumulation_steps = 4;  // global batch 32
  c.policy = policy;
  c.epochs = epochs;
  return c;
}

std::vector<Window> All(const WindowScheduleConfig& config) {
  WindowSchedule schedule(config);
  std::vector<Window> out;
  Window w;
  while (schedule.Next(&w)) out.push_back(w);
  EXPECT_EQ(static_cast<int64_t>(out.size()), schedule.steps_total());
  return out;
}

TEST(WindowSchedule, NormalizeEndsEachEpochWithAShortStep) {
  const auto windows = All(Config(PartialWindow::kNormalize));
  ASSERT_EQ(windows.size(), 8u);  // ceil(100 / 32) per epoch
  EXPECT_EQ(windows[3].size(), 4);
  EXPECT_EQ(windows[3].epoch, 0);
  EXPECT_EQ(windows[4].segments.at(0).epoch, 1);
  EXPECT_EQ(windows[4].segments.at(0).begin, 0);
  EXPECT_EQ(windows[7].size(), 4);
  EXPECT_EQ(WindowSchedule(Config(PartialWindow::kNormalize)).steps_in_first_epoch(), 4);
}

TEST(WindowSchedule, DropSkipsTheRemainder) {
  const auto windows = All(Config(PartialWindow::kDrop));
  ASSERT_EQ(windows.size(), 6u);  // floor(100 / 32) per epoch
  for (const Window& w : windows) EXPECT_EQ(w.size(), 32);
  EXPECT_EQ(windows[3].epoch, 1);
  EXPECT_EQ(windows[3].segments.at(0).begin, 0);
}

TEST(WindowSchedule, CarryRunsWindowsAcrossEpochs) {
  const auto windows = All(Config(PartialWindow::kCarry));
  ASSERT_EQ(windows.size(), 7u);  // ceil(200 / 32): six full, one of 8
  const Window& across = windows[3];
  ASSERT_EQ(across.segments.size(), 2u);
  EXPECT_EQ(across.segments[0].epoch, 0);
  EXPECT_EQ(across.segments[0].size(), 4);
  EXPECT_EQ(across.segments[1].epoch, 1);
  EXPECT_EQ(across.segments[1].size(), 28);
  EXPECT_EQ(windows.back().size(), 200 - 6 * 32);
}

TEST(WindowSchedule, MaxStepsCapsTheJob) {
  WindowScheduleConfig c = Config(PartialWindow::kNormalize, 100, 0);
  c.max_steps = 11;
  const auto windows = All(c);
  ASSERT_EQ(windows.size(), 11u);
  EXPECT_EQ(windows.back().epoch, 2);  // runs on across epochs
}

TEST(WindowSchedule, NominalBatchRampsTheAccumulationOverWarmup) {
  WindowScheduleConfig c = Config(PartialWindow::kNormalize, 10000, 1);
  c.micro_batch = 16;
  c.nominal_batch = 64;  // full accumulation 64 / 16 = 4
  c.warmup_steps = 6;
  const auto windows = All(c);
  std::vector<int64_t> ramp;
  for (int i = 0; i < 8; ++i) ramp.push_back(windows[static_cast<size_t>(i)].accumulation);
  // np.interp(t, [0, 6], [1, 4]).round() = 1, 1.5→2, 2, 2.5→2, 3, 3.5→4, then 4
  EXPECT_EQ(ramp, (std::vector<int64_t>{1, 2, 2, 2, 3, 4, 4, 4}));
  for (const Window& w : windows) EXPECT_EQ(w.global_batch, 16 * w.accumulation);
}

// What the closed-form counts must equal: the windows Next() hands out.
struct Walked {
  int64_t total = 0;
  int64_t starting_in_epoch_0 = 0;
};

Walked Walk(const WindowScheduleConfig& config) {
  WindowSchedule schedule(config);
  Walked walked;
  Window w;
  while (schedule.Next(&w)) {
    ++walked.total;
    if (w.epoch == 0) ++walked.starting_in_epoch_0;
  }
  return walked;
}

TEST(WindowSchedule, CountsInClosedFormWhatTheWindowsAre) {
  std::mt19937 random(20261202);
  const PartialWindow policies[] = {PartialWindow::kNormalize, PartialWindow::kDrop,
                                    PartialWindow::kCarry};
  auto draw = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(random);
  };
  for (int trial = 0; trial < 3000; ++trial) {
    WindowScheduleConfig c;
    c.policy = policies[trial % 3];
    c.samples_per_epoch = draw(1, 120);
    c.micro_batch = draw(1, 9);
    c.devices = draw(1, 3);
    c.accumulation_steps = draw(1, 5);
    c.epochs = draw(0, 4);
    c.max_steps = c.epochs == 0 ? draw(1, 60) : draw(0, 1) * draw(1, 60);
    if (draw(0, 2) == 0) {
      c.nominal_batch = draw(1, 80);
      c.warmup_steps = draw(0, 12);
    }
    const Walked walked = Walk(c);
    const WindowSchedule counted(c);
    SCOPED_TRACE(::testing::Message()
                 << "policy " << static_cast<int>(c.policy) << ", " << c.samples_per_epoch
                 << " samples × " << c.epochs << " epochs, max_steps " << c.max_steps << ", micro "
                 << c.micro_batch << " × accumulation " << c.accumulation_steps << " × devices "
                 << c.devices << ", nominal " << c.nominal_batch << " over " << c.warmup_steps);
    ASSERT_EQ(counted.steps_total(), walked.total);
    ASSERT_EQ(counted.steps_in_first_epoch(), walked.starting_in_epoch_0);
  }
}

TEST(WindowSchedule, CountsAMillionEpochsWithoutWalkingThem) {
  WindowScheduleConfig c = Config(PartialWindow::kNormalize, 1'000'000'000, 1'000'000);
  c.micro_batch = 1;
  c.accumulation_steps = 1;
  const WindowSchedule schedule(c);
  EXPECT_EQ(schedule.steps_total(), 1'000'000'000'000'000);
  EXPECT_EQ(schedule.steps_in_first_epoch(), 1'000'000'000);
}

TEST(WindowSchedule, DropWithAWindowLargerThanAnEpochHasNoWindowEvenWithoutAnEpochLimit) {
  WindowScheduleConfig c = Config(PartialWindow::kDrop, 20, 0);  // global batch 32
  c.max_steps = 5;
  EXPECT_EQ(WindowSchedule(c).steps_total(), 0);
  EXPECT_EQ(Walk(c).total, 0) << "Next() ends instead of skipping epochs forever";
}

TEST(NominalBatch, AccumulationAndWeightDecayFollowTheFormula) {
  EXPECT_EQ(NominalAccumulation(64, 16, 1, 100, 0), 4);
  EXPECT_EQ(NominalAccumulation(64, 24, 1, 100, 0), 3);   // round(2.67)
  EXPECT_EQ(NominalAccumulation(64, 128, 1, 100, 0), 1);  // never below 1
  EXPECT_EQ(NominalAccumulation(64, 8, 2, 100, 0), 4);    // micro × devices
  EXPECT_DOUBLE_EQ(NominalWeightDecay(5e-4, 64, 16, 1, 4), 5e-4);
  EXPECT_DOUBLE_EQ(NominalWeightDecay(5e-4, 64, 24, 1, 3), 5e-4 * 72 / 64);
}

}  // namespace
}  // namespace accumulus

namespace accumulus {
namespace {

TEST(WindowSchedule, ANewAccumulationTakesEffectAtTheNextWindowAndRecountsTheSteps) {
  WindowSchedule schedule(Config(PartialWindow::kNormalize, 100, 2));  // global 32
  Window w;
  ASSERT_TRUE(schedule.Next(&w));
  ASSERT_TRUE(schedule.Next(&w));  // samples 0..63 of epoch 0
  schedule.set_accumulation(2);    // global 16 from here
  EXPECT_EQ(schedule.accumulation(), 2);
  // 36 samples left in epoch 0: 16, 16, 4; then 100 in epoch 1: 7 windows.
  EXPECT_EQ(schedule.steps_total(), 2 + 3 + 7);
  std::vector<int64_t> sizes;
  while (schedule.Next(&w)) sizes.push_back(w.size());
  EXPECT_EQ(sizes, (std::vector<int64_t>{16, 16, 4, 16, 16, 16, 16, 16, 16, 4}));
}

TEST(WindowSchedule, SeekingToAPositionGivesTheWindowsFromThere) {
  WindowSchedule whole(Config(PartialWindow::kCarry, 100, 3));
  Window w;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(whole.Next(&w));
  const SchedulePosition position = whole.position();
  EXPECT_EQ(position.step, 5);
  WindowSchedule resumed(Config(PartialWindow::kCarry, 100, 3));
  resumed.Seek(position);
  Window a, b;
  while (whole.Next(&a)) {
    ASSERT_TRUE(resumed.Next(&b));
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(a.segments.size(), b.segments.size());
    EXPECT_EQ(a.segments.front().begin, b.segments.front().begin);
    EXPECT_EQ(a.segments.front().epoch, b.segments.front().epoch);
  }
  EXPECT_FALSE(resumed.Next(&b));
}

}  // namespace
}  // namespace accumulus
