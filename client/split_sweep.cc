#include "client/split_sweep.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <thread>

#include "accumulus/v1/trainer.pb.h"
#include "client/render.h"
#include "common/paths.h"
#include "common/rank_threads.h"
#include "common/subprocess.h"

namespace accumulus::client {
namespace {

std::string Bar(double value, double largest, int width) {
  const int n = largest > 0 ? static_cast<int>(value / largest * width + 0.5) : 0;
  return std::string(static_cast<size_t>(std::clamp(n, 0, width)), '#');
}

// "peak -42%, time +31%": checkpointing against the plain run of a split.
std::string CheckpointingEffect(const SweepRow& r) {
  if (r.checkpointed_peak_bytes <= 0 || r.peak_bytes <= 0 ||
      r.checkpointed_samples_per_second <= 0) {
    return "-";
  }
  const double memory =
      100.0 *
      (static_cast<double>(r.checkpointed_peak_bytes) / static_cast<double>(r.peak_bytes) - 1.0);
  const double time = 100.0 * (r.samples_per_second / r.checkpointed_samples_per_second - 1.0);
  char text[64];
  std::snprintf(text, sizeof text, "peak %+.0f%%, time %+.0f%%", memory, time);
  return text;
}

}  // namespace

StatusOr<std::vector<SweepRow>> RunSweep(const v1::JobSpec& spec, const v1::BatchPlan& batch) {
  v1::TrainerTask task;
  task.set_job_id("sweep");
  *task.mutable_spec() = spec;
  *task.mutable_batch() = batch;
  task.set_world_size(batch.devices());
  task.set_device("cpu");
  // This machine's cores as one rank's, resolved as a worker without thread
  // flags does (measured per split unless the spec fixes the threads).
  const RankThreads threads = ResolveRankThreads(
      spec.threads(), 0, 0, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  task.set_intra_op_threads(threads.intra_op);
  task.set_blas_threads(threads.blas);
  task.set_cores(threads.cores);

  SpawnOptions options;
  options.argv = {SiblingExecutable("accumulus-trainer"), "--sweep"};
  options.stdin_data = task.SerializeAsString();
  options.capture_stdout = true;
  auto trainer = Subprocess::Spawn(options);
  if (!trainer.ok()) return trainer.status();
  std::vector<SweepRow> rows;
  std::string line;
  while ((*trainer)->ReadLine(&line)) {
    SweepRow row;
    long long micro = 0, accumulation = 0, peak = 0, checkpointed_peak = 0;
    if (std::sscanf(line.c_str(), "sweep %lld %lld %lf %lld %lf %lld %d %d", &micro, &accumulation,
                    &row.samples_per_second, &peak, &row.checkpointed_samples_per_second,
                    &checkpointed_peak, &row.intra_op_threads, &row.blas_threads) == 8) {
      row.micro_batch = micro;
      row.accumulation_steps = accumulation;
      row.peak_bytes = peak;
      row.checkpointed_peak_bytes = checkpointed_peak;
      rows.push_back(row);
    }
  }
  const Subprocess::ExitInfo exit = (*trainer)->Wait();
  if (!exit.success) {
    return Status::Internal("the sweep's trainer failed (" + exit.description +
                            "); its error is above");
  }
  return rows;
}

std::string SweepTable(const std::vector<SweepRow>& rows) {
  double fastest = 0;
  int64_t largest = 0;
  for (const auto& r : rows) {
    fastest = std::max(fastest, r.samples_per_second);
    largest = std::max(largest, r.peak_bytes);
  }
  std::ostringstream out;
  char head[128];
  std::snprintf(head, sizeof head, "%-16s %12s  %-20s %12s  %-20s  %-26s  %s\n", "micro × accum",
                "samples/s", "", "peak tensors", "", "activation checkpointing", "threads");
  out << head;
  for (const auto& r : rows) {
    char row[256];
    const std::string split =
        std::to_string(r.micro_batch) + " × " + std::to_string(r.accumulation_steps);
    const std::string threads = r.intra_op_threads > 0
                                    ? "intra-op " + std::to_string(r.intra_op_threads) + ", BLAS " +
                                          std::to_string(r.blas_threads)
                                    : "as given";
    std::snprintf(row, sizeof row, "%-14s %12.0f  %-20s %12s  %-20s  %-26s  %s\n", split.c_str(),
                  r.samples_per_second, Bar(r.samples_per_second, fastest, 20).c_str(),
                  HumanBytes(r.peak_bytes).c_str(),
                  Bar(static_cast<double>(r.peak_bytes), static_cast<double>(largest), 20).c_str(),
                  CheckpointingEffect(r).c_str(), threads.c_str());
    out << row;
  }
  return out.str();
}

}  // namespace accumulus::client
