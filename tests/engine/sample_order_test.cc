#include "worker/engine/sample_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "common/window_schedule.h"

namespace accumulus::engine {
namespace {

TEST(EpochPermutation, IsAPermutation) {
  std::vector<int64_t> order = EpochPermutation(1000, 42, 0);
  std::sort(order.begin(), order.end());
  std::vector<int64_t> expected(1000);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
}

TEST(EpochPermutation, DependsOnSeedAndEpochOnly) {
  EXPECT_EQ(EpochPermutation(100, 7, 3), EpochPermutation(100, 7, 3));
  EXPECT_NE(EpochPermutation(100, 7, 3), EpochPermutation(100, 7, 4));
  EXPECT_NE(EpochPermutation(100, 7, 3), EpochPermutation(100, 8, 3));
}

// Which samples a window holds must not depend on how it is split.
std::multiset<int64_t> SamplesOfWindow(int64_t micro, int64_t accumulation, int devices,
                                       int64_t window) {
  const int64_t samples = 300;
  const std::vector<int64_t> order = EpochPermutation(samples, 9, 1);
  WindowScheduleConfig config;
  config.samples_per_epoch = samples;
  config.micro_batch = micro;
  config.accumulation_steps = accumulation;
  config.devices = devices;
  config.epochs = 1;
  WindowSchedule schedule(config);
  Window w;
  for (int64_t i = 0; i <= window; ++i) EXPECT_TRUE(schedule.Next(&w));
  // Window positions repeat every epoch (normalize); read them in epoch 1's order.
  const WindowRange range{w.segments.at(0).begin, w.segments.at(0).end};
  std::multiset<int64_t> seen;
  for (int rank = 0; rank < devices; ++rank) {
    for (const WindowRange& m : MicroBatchesOf(range, micro, accumulation, rank)) {
      EXPECT_LE(m.size(), micro);
      for (int64_t i = m.begin; i < m.end; ++i) seen.insert(order[static_cast<size_t>(i)]);
    }
  }
  return seen;
}

TEST(MicroBatchesOf, WindowContentsAreIndependentOfTheSplit) {
  // 300 samples in windows of 32: nine full windows and a short one of 12.
  for (int64_t w = 0; w < 10; ++w) {
    const auto reference = SamplesOfWindow(4, 8, 1, w);
    EXPECT_EQ(reference.size(), w < 9 ? 32u : 12u);
    EXPECT_EQ(SamplesOfWindow(8, 4, 1, w), reference) << "window " << w;
    EXPECT_EQ(SamplesOfWindow(4, 4, 2, w), reference) << "window " << w;
    EXPECT_EQ(SamplesOfWindow(32, 1, 1, w), reference) << "window " << w;
  }
}

TEST(MicroBatchesOf, ShortWindowEndsWithAShortMicroBatch) {
  const std::vector<WindowRange> micro = MicroBatchesOf({32, 44}, 8, 4, 0);
  ASSERT_EQ(micro.size(), 2u);
  EXPECT_EQ(micro[0].size(), 8);
  EXPECT_EQ(micro[1].size(), 4);
}

}  // namespace
}  // namespace accumulus::engine
