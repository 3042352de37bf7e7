// What a job's metrics cost per optimizer step: the work the trainer adds to
// each window for them — reading the process RSS, building the step's
// report and writing it as the trainer does (a length-delimited protobuf
// message on a pipe, flushed). compare.py divides it by each
// configuration's step time (the metrics overhead).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include "worker/engine/events.h"
#include "worker/engine/memory_meter.h"
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

}  // namespace
}  // namespace accumulus::engine
