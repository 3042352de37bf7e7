#include "common/window_schedule.h"

#include <algorithm>
#include <limits>

#include "common/batch_arithmetic.h"

namespace accumulus {

int64_t Window::size() const {
  int64_t n = 0;
  for (const Segment& s : segments) n += s.size();
  return n;
}

namespace {

constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();

int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? kUnbounded : product;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? kUnbounded : sum;
}

struct StepCounts {
  int64_t total = 0;
  int64_t starting_in_epoch_0 = 0;
};

// The windows of global batch `g` from position (epoch, offset) of a stream
// of `epochs` epochs (0: endless) of `n` samples, without a step limit.
StepCounts CountConstantWindows(const WindowScheduleConfig& c, int64_t g, int64_t epoch,
                                int64_t offset) {
  const int64_t n = c.samples_per_epoch;
  const bool endless = c.epochs == 0;
  const int64_t epochs_after = endless ? 0 : c.epochs - epoch - 1;
  StepCounts counts;
  switch (c.policy) {
    case PartialWindow::kNormalize: {
      const int64_t current = CeilDiv(n - offset, g);
      counts.total =
          endless ? kUnbounded : SaturatingAdd(current, SaturatingMul(epochs_after, CeilDiv(n, g)));
      counts.starting_in_epoch_0 = epoch == 0 ? current : 0;
      break;
    }
    case PartialWindow::kDrop: {
      const int64_t current = (n - offset) / g;
      const int64_t per_epoch = n / g;
      counts.total = endless ? (per_epoch == 0 ? current : kUnbounded)
                             : SaturatingAdd(current, SaturatingMul(epochs_after, per_epoch));
      counts.starting_in_epoch_0 = epoch == 0 ? current : 0;
      break;
    }
    case PartialWindow::kCarry: {
      counts.total = endless
                         ? kUnbounded
                         : CeilDiv(SaturatingAdd(SaturatingMul(epochs_after + 1, n), -offset), g);
      counts.starting_in_epoch_0 = epoch == 0 ? CeilDiv(n - offset, g) : 0;
      break;
    }
  }
  return counts;
}

}  // namespace

WindowSchedule::WindowSchedule(WindowScheduleConfig config) : config_(std::move(config)) {
  // The ramp window by window, then the constant rest in closed form.
  const int64_t ramp = config_.nominal_batch > 0 ? config_.warmup_steps : 0;
  Window w;
  bool more = true;
  while (step_ < ramp && (more = Advance(&w))) {
    ++steps_total_;
    if (w.epoch == 0) ++steps_first_epoch_;
  }
  if (more) {
    int64_t in_epoch_0 = 0;
    steps_total_ = SaturatingAdd(steps_total_, CountFromHere(&in_epoch_0));
    steps_first_epoch_ += in_epoch_0;
  }
  step_ = epoch_ = offset_ = 0;
}

int64_t WindowSchedule::CountFromHere(int64_t* in_epoch_0) const {
  const bool stream_left =
      config_.samples_per_epoch > 0 && (config_.epochs == 0 || epoch_ < config_.epochs);
  const int64_t g = config_.micro_batch * AccumulationAt(config_, step_) * config_.devices;
  StepCounts rest =
      stream_left && g > 0 ? CountConstantWindows(config_, g, epoch_, offset_) : StepCounts{};
  if (config_.max_steps > 0) {
    const int64_t allowed = std::max<int64_t>(0, config_.max_steps - step_);
    rest.total = std::min(rest.total, allowed);
    rest.starting_in_epoch_0 = std::min(rest.starting_in_epoch_0, allowed);
  }
  if (in_epoch_0 != nullptr) *in_epoch_0 = rest.starting_in_epoch_0;
  return rest.total;
}

bool WindowSchedule::Next(Window* window) { return Advance(window); }

void WindowSchedule::set_accumulation(int64_t accumulation) {
  config_.accumulation_steps = accumulation;
  steps_total_ = SaturatingAdd(step_, CountFromHere());
}

void WindowSchedule::Seek(const SchedulePosition& position) {
  step_ = position.step;
  epoch_ = position.epoch;
  offset_ = position.offset;
}

int64_t WindowSchedule::AccumulationAt(const WindowScheduleConfig& config, int64_t step) {
  if (config.nominal_batch <= 0) return config.accumulation_steps;
  return NominalAccumulation(config.nominal_batch, config.micro_batch, config.devices, step,
                             config.warmup_steps);
}

bool WindowSchedule::Advance(Window* window) {
  const int64_t n = config_.samples_per_epoch;
  if (n <= 0) return false;
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
        // A whole epoch is smaller than the window: every later one is too
        // (the batch only grows), so no window is left.
        if (offset_ == 0) return false;
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
