#include "worker/engine/step_report.h"

namespace accumulus::engine {

StepReport ReportOf(const Window& w, const WindowResult& result, double lr, double seconds,
                    const PhaseTimes& phases, const MemoryMeter& memory, int64_t steps_total,
                    int64_t skipped_steps, bool token_data) {
  StepReport report;
  report.step = w.step;
  report.epoch = w.epoch;
  report.microbatches = result.microbatches;
  report.samples = result.samples;
  report.effective_batch = w.global_batch;
  report.loss_items = result.loss_items;
  report.loss = result.loss;
  report.lr = lr;
  report.grad_norm = result.grad_norm;
  report.clipped = result.clipped;
  report.step_seconds = seconds;
  report.samples_per_second = seconds > 0 ? static_cast<double>(result.samples) / seconds : 0;
  report.tensor_bytes = memory.current_bytes();
  report.tensor_peak_bytes = memory.peak_bytes();
  report.process_rss_bytes = ProcessRssBytes();
  report.allocator_reserved_bytes = memory.reserved_bytes();
  report.allocator_retries = memory.allocation_retries();
  report.steps_total = steps_total;
  report.allreduce_calls = result.sync.allreduce_calls;
  report.allreduce_bytes = result.sync.bytes;
  report.comm_seconds = result.sync.seconds;
  report.loss_scale = result.loss_scale;
  report.skipped = result.skipped;
  report.skipped_steps = skipped_steps;
  report.forward_seconds = phases.forward_seconds;
  report.backward_seconds = phases.backward_seconds;
  report.optimizer_seconds = phases.optimizer_seconds;
  report.tokens = token_data ? result.loss_items : 0;
  return report;
}

}  // namespace accumulus::engine
