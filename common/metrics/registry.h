// A small Prometheus client: registry → family → labelled child
// (counter, gauge, histogram), rendered in text exposition format 0.0.4.
//
// The interface is deliberately narrow (the prometheus-cpp model) so the real
// client library can replace it where it is installed. Thread-safe: children
// are updated lock-free or under their own mutex; family maps are guarded.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/mutex.h"

namespace accumulus::metrics {

// A value that only goes up (events relayed, steps taken).
class Counter {
 public:
  void Increment(double by = 1.0);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A value that goes up and down (jobs running, the latest loss).
class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Increment(double by = 1.0);
  void Decrement(double by = 1.0) { Increment(-by); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Observations counted into cumulative buckets with upper bounds.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative_counts;  // one per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Collect() const;

 private:
  const std::vector<double> bounds_;
  mutable Mutex mutex_;
  std::vector<uint64_t> counts_ GUARDED_BY(mutex_);  // one per bound plus +Inf
  double sum_ GUARDED_BY(mutex_) = 0;
};

enum class MetricType { kCounter, kGauge, kHistogram };

// All children of one metric name, one per combination of label values.
template <typename Metric>
class Family {
 public:
  // `label_values` must have one value per label name, in the same order.
  // Returns a child that lives until Remove() or the family's destruction.
  Metric* WithLabels(const std::vector<std::string>& label_values);
  // Forgets a child (e.g. when a job is deleted). The pointer dies with it.
  void Remove(const std::vector<std::string>& label_values);

 private:
  friend class Registry;
  Family(std::string name, std::string help, std::vector<std::string> label_names,
         std::vector<double> bounds);
  std::string Render() const;

  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bounds_;  // histograms only
  mutable Mutex mutex_;
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> children_ GUARDED_BY(mutex_);
};

class Registry {
 public:
  Family<Counter>* AddCounter(const std::string& name, const std::string& help,
                              std::vector<std::string> label_names = {});
  Family<Gauge>* AddGauge(const std::string& name, const std::string& help,
                          std::vector<std::string> label_names = {});
  Family<Histogram>* AddHistogram(const std::string& name, const std::string& help,
                                  std::vector<double> bounds,
                                  std::vector<std::string> label_names = {});

  // Every family in registration order, in text exposition format 0.0.4.
  std::string Render() const;

 private:
  mutable Mutex mutex_;
  std::vector<std::unique_ptr<Family<Counter>>> counters_ GUARDED_BY(mutex_);
  std::vector<std::unique_ptr<Family<Gauge>>> gauges_ GUARDED_BY(mutex_);
  std::vector<std::unique_ptr<Family<Histogram>>> histograms_ GUARDED_BY(mutex_);
  // Rendering order: (type, index into the vector of that type).
  std::vector<std::pair<MetricType, size_t>> order_ GUARDED_BY(mutex_);
};

// Exposition helpers, exposed for tests.
std::string EscapeLabelValue(const std::string& value);
std::string FormatValue(double value);

}  // namespace accumulus::metrics
