#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "common/metrics/registry.h"

namespace accumulus::metrics {
namespace {

TEST(Registry, RendersCountersAndGaugesWithLabels) {
  Registry registry;
  registry.AddCounter("accumulus_test_total", "A test counter.", {"job"})
      ->WithLabels({"job-1"})
      ->Increment(3);
  registry.AddGauge("accumulus_test_bytes", "A test gauge.")->WithLabels({})->Set(1.5);
  EXPECT_EQ(registry.Render(),
            "# HELP accumulus_test_total A test counter.\n"
            "# TYPE accumulus_test_total counter\n"
            "accumulus_test_total{job=\"job-1\"} 3\n"
            "# HELP accumulus_test_bytes A test gauge.\n"
            "# TYPE accumulus_test_bytes gauge\n"
            "accumulus_test_bytes 1.5\n");
}

TEST(Registry, RendersCumulativeHistogramBuckets) {
  Registry registry;
  Histogram* h =
      registry.AddHistogram("accumulus_test_seconds", "Durations.", {0.1, 1})->WithLabels({});
  for (double v : {0.05, 0.1, 0.5, 2.0}) h->Observe(v);
  EXPECT_EQ(registry.Render(),
            "# HELP accumulus_test_seconds Durations.\n"
            "# TYPE accumulus_test_seconds histogram\n"
            "accumulus_test_seconds_bucket{le=\"0.1\"} 2\n"
            "accumulus_test_seconds_bucket{le=\"1\"} 3\n"
            "accumulus_test_seconds_bucket{le=\"+Inf\"} 4\n"
            "accumulus_test_seconds_sum 2.65\n"
            "accumulus_test_seconds_count 4\n");
}

TEST(Registry, FormatsValuesShortestAndWholeNumbersInFull) {
  EXPECT_EQ(FormatValue(1000), "1000");
  EXPECT_EQ(FormatValue(2147483648.0), "2147483648");
  EXPECT_EQ(FormatValue(-3), "-3");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(1e300), "1e+300");
  EXPECT_EQ(FormatValue(0.30000000000000004), "0.30000000000000004");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
}

TEST(Registry, EscapesLabelValues) { EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd"); }

TEST(Registry, RemovedChildrenDisappear) {
  Registry registry;
  Family<Gauge>* family = registry.AddGauge("accumulus_test", "t", {"job"});
  family->WithLabels({"a"})->Set(1);
  family->WithLabels({"b"})->Set(2);
  family->Remove({"a"});
  const std::string text = registry.Render();
  EXPECT_EQ(text.find("job=\"a\""), std::string::npos);
  EXPECT_NE(text.find("job=\"b\"} 2"), std::string::npos);
}

TEST(Registry, WrongLabelCountThrows) {
  Registry registry;
  EXPECT_THROW(registry.AddGauge("accumulus_test", "t", {"job"})->WithLabels({}),
               std::invalid_argument);
}

TEST(Counter, ConcurrentIncrementsAreAllCounted) {
  Counter counter;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100000; ++i) counter.Increment();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter.Value(), 400000);
}

}  // namespace
}  // namespace accumulus::metrics
