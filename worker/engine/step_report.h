// The StepReport of a finished window: what the window accumulated, how long
// it took and the memory it held.
#pragma once

#include <cstdint>

#include "common/window_schedule.h"
#include "worker/engine/events.h"
#include "worker/engine/memory_meter.h"
#include "worker/engine/window_accumulator.h"

namespace accumulus::engine {

StepReport ReportOf(const Window& w, const WindowResult& result, double lr, double seconds,
                    const MemoryMeter& memory, int64_t steps_total, int64_t skipped_steps);

}  // namespace accumulus::engine
