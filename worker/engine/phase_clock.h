// Where a window's time goes: the forward passes of its micro-batches (with
// their loss), their backward passes, and the optimizer step. (The
// all-reduce is timed by the gradient sync; the rest of a step is reading the
// data, unscaling and clipping.)
//
// CPU: the host's clock; a call's work is done when it returns. CUDA: a host
// clock would time only the kernel launches, so each phase is bracketed by
// CUDA events on the current stream, and the events are read once the
// window's work is done — after the optimizer step, a wait at the window
// boundary, never inside a window.
#pragma once

#include <torch/types.h>

#include <exception>
#include <memory>

namespace accumulus::engine {

enum class Phase { kForward, kBackward, kOptimizer };

struct PhaseTimes {
  double forward_seconds = 0;
  double backward_seconds = 0;
  double optimizer_seconds = 0;
};

class PhaseClock {
 public:
  virtual ~PhaseClock() = default;
  virtual void Start(Phase phase) = 0;
  virtual void Stop(Phase phase) = 0;
  // The seconds of every phase since the last call (a phase started but not
  // stopped, as by an exception, counts nothing); the next window starts.
  virtual PhaseTimes TakeWindow() = 0;
};

// The clock for `device`: CUDA events on a CUDA device (in a CUDA build),
// the host's clock otherwise.
std::unique_ptr<PhaseClock> MakePhaseClock(const torch::Device& device);

// Times one phase for as long as it lives (null clock: nothing).
class PhaseScope {
 public:
  PhaseScope(PhaseClock* clock, Phase phase) : clock_(clock), phase_(phase) {
    if (clock_ != nullptr) clock_->Start(phase_);
  }
  ~PhaseScope() {
    if (clock_ != nullptr && !std::uncaught_exceptions()) clock_->Stop(phase_);
  }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  PhaseClock* const clock_;
  const Phase phase_;
};

}  // namespace accumulus::engine
