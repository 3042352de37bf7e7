#include "common/metrics/registry.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "common/mutex.h"

namespace accumulus::metrics {
namespace {

void AtomicAdd(std::atomic<double>& target, double by) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + by, std::memory_order_relaxed)) {
  }
}

std::string EscapeHelp(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string LabelSet(const std::vector<std::string>& names, const std::vector<std::string>& values,
                     const std::string& extra_name = "", const std::string& extra_value = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += (out.empty() ? "" : ",") + names[i] + "=\"" + EscapeLabelValue(values[i]) + "\"";
  }
  if (!extra_name.empty()) {
    out += (out.empty() ? "" : ",") + extra_name + "=\"" + extra_value + "\"";
  }
  return out.empty() ? "" : "{" + out + "}";
}

const char* TypeName(const Counter*) { return "counter"; }
const char* TypeName(const Gauge*) { return "gauge"; }
const char* TypeName(const Histogram*) { return "histogram"; }

void RenderChild(const std::string& name, const std::vector<std::string>& label_names,
                 const std::vector<std::string>& values, const Counter& c, std::string* out) {
  *out += name + LabelSet(label_names, values) + " " + FormatValue(c.Value()) + "\n";
}

void RenderChild(const std::string& name, const std::vector<std::string>& label_names,
                 const std::vector<std::string>& values, const Gauge& g, std::string* out) {
  *out += name + LabelSet(label_names, values) + " " + FormatValue(g.Value()) + "\n";
}

void RenderChild(const std::string& name, const std::vector<std::string>& label_names,
                 const std::vector<std::string>& values, const Histogram& h, std::string* out) {
  const Histogram::Snapshot s = h.Collect();
  for (size_t i = 0; i <= s.bounds.size(); ++i) {
    const std::string le = i < s.bounds.size() ? FormatValue(s.bounds[i]) : "+Inf";
    *out += name + "_bucket" + LabelSet(label_names, values, "le", le) + " " +
            std::to_string(s.cumulative_counts[i]) + "\n";
  }
  *out += name + "_sum" + LabelSet(label_names, values) + " " + FormatValue(s.sum) + "\n";
  *out += name + "_count" + LabelSet(label_names, values) + " " + std::to_string(s.count) + "\n";
}

template <typename Metric>
std::unique_ptr<Metric> MakeChild(const std::vector<double>&) {
  return std::make_unique<Metric>();
}
template <>
std::unique_ptr<Histogram> MakeChild<Histogram>(const std::vector<double>& bounds) {
  return std::make_unique<Histogram>(bounds);
}

}  // namespace

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[32];
  // Whole numbers (counts, bytes) in full: 1000, not 1e+03.
  if (value == std::trunc(value) && std::fabs(value) < 9007199254740992.0) {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
    return buffer;
  }
  // Otherwise the shortest form that reads back as the same double (0.1,
  // not 0.10000000000000001).
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

void Counter::Increment(double by) {
  if (by < 0) throw std::invalid_argument("a counter cannot decrease");
  AtomicAdd(value_, by);
}

void Gauge::Increment(double by) { AtomicAdd(value_, by); }

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  size_t bucket = 0;
  while (bucket < bounds_.size() && value > bounds_[bucket]) ++bucket;
  MutexLock lock(&mutex_);
  ++counts_[bucket];
  sum_ += value;
}

Histogram::Snapshot Histogram::Collect() const {
  Snapshot s;
  s.bounds = bounds_;
  MutexLock lock(&mutex_);
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    s.cumulative_counts.push_back(running);
  }
  s.count = running;
  s.sum = sum_;
  return s;
}

template <typename Metric>
Family<Metric>::Family(std::string name, std::string help, std::vector<std::string> label_names,
                       std::vector<double> bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      bounds_(std::move(bounds)) {}

template <typename Metric>
Metric* Family<Metric>::WithLabels(const std::vector<std::string>& label_values) {
  if (label_values.size() != label_names_.size()) {
    throw std::invalid_argument(name_ + ": expected " + std::to_string(label_names_.size()) +
                                " label values, got " + std::to_string(label_values.size()));
  }
  MutexLock lock(&mutex_);
  auto& child = children_[label_values];
  if (!child) child = MakeChild<Metric>(bounds_);
  return child.get();
}

template <typename Metric>
void Family<Metric>::Remove(const std::vector<std::string>& label_values) {
  MutexLock lock(&mutex_);
  children_.erase(label_values);
}

template <typename Metric>
std::string Family<Metric>::Render() const {
  std::string out = "# HELP " + name_ + " " + EscapeHelp(help_) + "\n";
  out += "# TYPE " + name_ + " " + TypeName(static_cast<const Metric*>(nullptr)) + "\n";
  MutexLock lock(&mutex_);
  for (const auto& [values, child] : children_) {
    RenderChild(name_, label_names_, values, *child, &out);
  }
  return out;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

Family<Counter>* Registry::AddCounter(const std::string& name, const std::string& help,
                                      std::vector<std::string> label_names) {
  MutexLock lock(&mutex_);
  counters_.emplace_back(new Family<Counter>(name, help, std::move(label_names), {}));
  order_.emplace_back(MetricType::kCounter, counters_.size() - 1);
  return counters_.back().get();
}

Family<Gauge>* Registry::AddGauge(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names) {
  MutexLock lock(&mutex_);
  gauges_.emplace_back(new Family<Gauge>(name, help, std::move(label_names), {}));
  order_.emplace_back(MetricType::kGauge, gauges_.size() - 1);
  return gauges_.back().get();
}

Family<Histogram>* Registry::AddHistogram(const std::string& name, const std::string& help,
                                          std::vector<double> bounds,
                                          std::vector<std::string> label_names) {
  MutexLock lock(&mutex_);
  histograms_.emplace_back(
      new Family<Histogram>(name, help, std::move(label_names), std::move(bounds)));
  order_.emplace_back(MetricType::kHistogram, histograms_.size() - 1);
  return histograms_.back().get();
}

std::string Registry::Render() const {
  MutexLock lock(&mutex_);
  std::string out;
  for (const auto& [type, index] : order_) {
    switch (type) {
      case MetricType::kCounter:
        out += counters_[index]->Render();
        break;
      case MetricType::kGauge:
        out += gauges_[index]->Render();
        break;
      case MetricType::kHistogram:
        out += histograms_[index]->Render();
        break;
    }
  }
  return out;
}

}  // namespace accumulus::metrics
