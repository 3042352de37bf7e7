#include "worker/engine/phase_clock.h"

#include <array>
#include <chrono>
#include <optional>
#include <vector>

#ifdef ACCUMULUS_WITH_CUDA
#include <c10/cuda/CUDAEvent.h>
#endif

namespace accumulus::engine {
namespace {

constexpr size_t kPhases = 3;

size_t IndexOf(Phase phase) { return static_cast<size_t>(phase); }

PhaseTimes TimesOf(const std::array<double, kPhases>& seconds) {
  return {seconds[IndexOf(Phase::kForward)], seconds[IndexOf(Phase::kBackward)],
          seconds[IndexOf(Phase::kOptimizer)]};
}

class HostPhaseClock final : public PhaseClock {
 public:
  void Start(Phase phase) override { started_[IndexOf(phase)] = Clock::now(); }
  void Stop(Phase phase) override {
    std::optional<Clock::time_point>& started = started_[IndexOf(phase)];
    if (!started) return;
    seconds_[IndexOf(phase)] += std::chrono::duration<double>(Clock::now() - *started).count();
    started.reset();
  }
  PhaseTimes TakeWindow() override {
    const PhaseTimes times = TimesOf(seconds_);
    seconds_ = {};
    started_ = {};
    return times;
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::array<std::optional<Clock::time_point>, kPhases> started_{};
  std::array<double, kPhases> seconds_{};
};

#ifdef ACCUMULUS_WITH_CUDA
class CudaPhaseClock final : public PhaseClock {
 public:
  void Start(Phase phase) override {
    Span& span = Next();
    span.phase = phase;
    span.start.record();
    open_[IndexOf(phase)] = used_ - 1;
  }
  void Stop(Phase phase) override {
    std::optional<size_t>& open = open_[IndexOf(phase)];
    if (!open) return;
    spans_[*open]->stop.record();
    spans_[*open]->stopped = true;
    open.reset();
  }
  PhaseTimes TakeWindow() override {
    std::array<double, kPhases> seconds{};
    // The newest stop is the last of the window's work on the stream; once
    // it is done, every earlier event is too.
    for (size_t i = used_; i-- > 0;) {
      if (spans_[i]->stopped) {
        spans_[i]->stop.synchronize();
        break;
      }
    }
    for (size_t i = 0; i < used_; ++i) {
      Span& span = *spans_[i];
      if (span.stopped) {
        seconds[IndexOf(span.phase)] += span.start.elapsed_time(span.stop) / 1000.0;
      }
      span.stopped = false;
    }
    used_ = 0;
    open_ = {};
    return TimesOf(seconds);
  }

 private:
  struct Span {
    Phase phase = Phase::kForward;
    // Timing events (CUDAEvent's default flags disable timing).
    c10::cuda::CUDAEvent start{cudaEventDefault};
    c10::cuda::CUDAEvent stop{cudaEventDefault};
    bool stopped = false;
  };
  // The spans of the window so far; kept from window to window, so that
  // each event is created once.
  Span& Next() {
    if (used_ == spans_.size()) spans_.push_back(std::make_unique<Span>());
    Span& span = *spans_[used_++];
    span.stopped = false;
    return span;
  }

  std::vector<std::unique_ptr<Span>> spans_;
  size_t used_ = 0;
  std::array<std::optional<size_t>, kPhases> open_{};
};
#endif

}  // namespace

std::unique_ptr<PhaseClock> MakePhaseClock(const torch::Device& device) {
#ifdef ACCUMULUS_WITH_CUDA
  if (device.is_cuda()) return std::make_unique<CudaPhaseClock>();
#endif
  (void)device;
  return std::make_unique<HostPhaseClock>();
}

}  // namespace accumulus::engine
