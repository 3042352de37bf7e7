// What a job's metrics cost per optimizer step: the work the trainer adds to
// each window for them — reading the process RSS, building the step's
// report and writing it as the trainer does (a length-delimited protobuf
// message on a pipe, flushed). compare.py divides it by each
// configuration's step time (the metrics overhead).
//
// And the same whole, in the window it measures: the mlp's window at small
// micro-batches (many micro-batches, so the most phase timing per sample)
// with its phases timed and its report written, against the bare window.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include "bench/bench_models.h"
#include "bench/bench_workload.h"
#include "worker/engine/events.h"
#include "worker/engine/loss.h"
#include "worker/engine/memory_meter.h"
#include "worker/engine/phase_clock.h"
#include "worker/engine/window_accumulator.h"
#include "worker/trainer/proto_event_sink.h"

namespace accumulus::engine {
namespace {

void BM_MetricsPerStep(benchmark::State& state) {
  const int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  trainer::ProtoEventSink sink(fd, v1::RuntimeInfo());
  StepReport report;
  report.microbatches = 16;
  report.samples = report.effective_batch = report.loss_items = 256;
  report.loss = 2.3;
  report.lr = 0.01;
  report.grad_norm = 1.5;
  report.step_seconds = 0.02;
  report.tensor_bytes = report.tensor_peak_bytes = 1 << 24;
  for (auto _ : state) {
    ++report.step;
    report.process_rss_bytes = ProcessRssBytes();
    sink.OnStep(report);
  }
  ::close(fd);
}
BENCHMARK(BM_MetricsPerStep)->UseRealTime()->Unit(benchmark::kMicrosecond);

// The phase timing a trainer adds to one CPU window of k micro-batches: a
// forward and a backward span per micro-batch, the optimizer's, and the
// window's total read. Its cost plus BM_MetricsPerStep's, divided by the
// window's time, is the metrics overhead, to a precision no A/B of whole
// windows on a noisy machine reaches (BM_WindowMetrics below).
void BM_PhaseClockPerWindow(benchmark::State& state) {
  const int64_t microbatches = state.range(0);
  const std::unique_ptr<PhaseClock> clock = MakePhaseClock(torch::kCPU);
  for (auto _ : state) {
    for (int64_t i = 0; i < microbatches; ++i) {
      { PhaseScope forward(clock.get(), Phase::kForward); }
      { PhaseScope backward(clock.get(), Phase::kBackward); }
    }
    { PhaseScope optimizer(clock.get(), Phase::kOptimizer); }
    benchmark::DoNotOptimize(clock->TakeWindow());
  }
}
BENCHMARK(BM_PhaseClockPerWindow)
    ->ArgName("microbatches")
    ->Arg(16)
    ->Arg(64)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// metrics 1: as the trainer runs a window (phases timed, the report built
// and written); 0: the window alone. split_report.py sets them side by side.
void BM_WindowMetrics(benchmark::State& state) {
  const int64_t micro = state.range(0);
  const bool metrics = state.range(1) != 0;
  const int64_t accumulation = kGlobalBatch / micro;
  UseAccumulusThreadSplit(state, "mlp", micro);
  const TrainConfig c = ModelUnderTest("mlp");
  Workload w = MakeWorkload(c, micro);
  WindowAccumulator window(
      w.model->Parameters(), [&](const torch::Tensor& in) { return w.model->Forward(in); },
      LossOf(c.model.loss, c.data.task), Normalization::kExact, accumulation, 0);
  const std::unique_ptr<PhaseClock> clock = MakePhaseClock(torch::kCPU);
  if (metrics) window.set_phase_clock(clock.get());
  const int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  trainer::ProtoEventSink sink(fd, v1::RuntimeInfo());
  StepReport report;

  auto run_window = [&] {
    for (const Batch& b : w.micro_batches) window.AddMicroBatch(b);
    const WindowResult result = window.FinishWindow();
    {
      PhaseScope optimizer(metrics ? clock.get() : nullptr, Phase::kOptimizer);
      w.optimizer->step();
      w.model->ZeroGrad();
    }
    if (metrics) {
      const PhaseTimes phases = clock->TakeWindow();
      ++report.step;
      report.loss = result.loss;
      report.forward_seconds = phases.forward_seconds;
      report.backward_seconds = phases.backward_seconds;
      report.optimizer_seconds = phases.optimizer_seconds;
      report.process_rss_bytes = ProcessRssBytes();
      sink.OnStep(report);
    }
  };
  run_window();
  MeasureWindows(state, accumulation, run_window);
  ::close(fd);
}
BENCHMARK(BM_WindowMetrics)
    ->ArgNames({"micro", "metrics"})
    ->Args({4, 0})
    ->Args({4, 1})
    ->Args({16, 0})
    ->Args({16, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace accumulus::engine
