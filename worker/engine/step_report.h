// The StepReport of a finished window: what the window accumulated, how long
// it took and the memory it held.
#pragma once

#include <cstdint>

#include "common/window_schedule.h"
#include "worker/engine/events.h"
#include "worker/engine/memory_meter.h"
#include "worker/engine/phase_clock.h"
#include "worker/engine/window_accumulator.h"

namespace accumulus::engine {

// `token_data`: the data set's items are tokens (its loss items are the
// window's target tokens).
StepReport ReportOf(const Window& w, const WindowResult& result, double lr, double seconds,
                    const PhaseTimes& phases, const MemoryMeter& memory, int64_t steps_total,
                    int64_t skipped_steps, bool token_data);

}  // namespace accumulus::engine
