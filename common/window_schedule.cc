#include "common/window_schedule.h"

#include <algorithm>

#include "common/batch_arithmetic.h"

namespace accumulus {

int64_t Window::size() const {
  int64_t n = 0;
  for (const Segment& s : segments) n += s.size();
  return n;
}

WindowSchedule::WindowSchedule(WindowScheduleConfig config) : config_(std::move(config)) {
  // Walk the schedule once for the totals, then rewind.
  Window w;
  while (Advance(&w)) {
    ++steps_total_;
    if (w.epoch == 0) ++steps_first_epoch_;
  }
  step_ = epoch_ = offset_ = 0;
}

bool WindowSchedule::Next(Window* window) { return Advance(window); }

int64_t WindowSchedule::AccumulationAt(const WindowScheduleConfig& config, int64_t step) {
  if (config.nominal_batch <= 0) return config.accumulation_steps;
  return NominalAccumulation(config.nominal_batch, config.micro_batch, config.devices, step,
                             config.warmup_steps);
}

bool WindowSchedule::Advance(Window* window) {
  const int64_t n = config_.samples_per_epoch;
  if (config_.max_steps > 0 && step_ >= config_.max_steps) return false;
  if (config_.epochs > 0 && epoch_ >= config_.epochs) return false;

  const int64_t accumulation = AccumulationAt(config_, step_);
  const int64_t global = config_.micro_batch * accumulation * config_.devices;
  window->step = step_ + 1;
  window->epoch = epoch_;
  window->accumulation = accumulation;
  window->global_batch = global;
  window->segments.clear();

  int64_t wanted = global;
  while (wanted > 0) {
    if (config_.epochs > 0 && epoch_ >= config_.epochs) break;  // the job's last samples
    const int64_t take = std::min(wanted, n - offset_);
    const bool epoch_ends = offset_ + take == n;
    if (epoch_ends && take < wanted && config_.policy != PartialWindow::kCarry) {
      if (config_.policy == PartialWindow::kDrop) {
        // Skip the epoch's remainder; the window starts the next epoch.
        ++epoch_;
        offset_ = 0;
        window->epoch = epoch_;
        if (config_.epochs > 0 && epoch_ >= config_.epochs) return false;
        continue;
      }
      window->segments.push_back({epoch_, offset_, n});  // normalize: a short window
      ++epoch_;
      offset_ = 0;
      break;
    }
    window->segments.push_back({epoch_, offset_, offset_ + take});
    offset_ += take;
    wanted -= take;
    if (offset_ == n) {
      ++epoch_;
      offset_ = 0;
    }
  }
  if (window->segments.empty()) return false;
  ++step_;
  return true;
}

}  // namespace accumulus
