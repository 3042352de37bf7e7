// accumulus-trainer: one rank of one job, started by a worker daemon. Reads
// its TrainerTask from stdin, trains, and reports on file descriptor 3.
// `accumulus-trainer --probe-devices` lists the CUDA devices instead;
// `accumulus-trainer --sweep` measures the usual splits of the task's job.
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <torch/version.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/signals.h"
#include "worker/engine/device_probe.h"
#include "worker/engine/split_sweep.h"
#include "worker/engine/thread_setup.h"
#include "worker/engine/trainer.h"
#include "worker/trainer/lease_watchdog.h"
#include "worker/trainer/proto_event_sink.h"
#include "worker/trainer/run_log.h"
#include "worker/trainer/task_config.h"
#include "worker/trainer/trainer_exit.h"

namespace {

constexpr int kEventsFd = 3;
constexpr int kLeaseFd = 4;
std::atomic<bool> stop_requested{false};

void RequestStop(int) { stop_requested.store(true); }

// A read of a mapped data file past its end — the file shrank, truncated or
// rewritten in place while the job read it — raises SIGBUS. The log's last
// line, which the job's failure reason quotes, says so; the handler is
// reset on entry (SA_RESETHAND), so the read faults again on return and the
// process ends by SIGBUS as it would have.
void ExplainBusError(int) {
  static constexpr char kWhy[] =
      "accumulus-trainer: SIGBUS: a read of a memory-mapped file failed; most likely a data file "
      "(data.path, data.labels_path) shrank while the job read it. Replace a data file by "
      "renaming a new one over it, never by rewriting it in place.\n";
  (void)!write(STDERR_FILENO, kWhy, sizeof(kWhy) - 1);
}

int ProbeDevices() {
  for (const auto& d : accumulus::engine::ProbeCudaDevices()) {
    std::printf("cuda %d %lld %s\n", d.index, static_cast<long long>(d.memory_bytes),
                d.name.c_str());
  }
  return 0;
}

// The task's thread counts; when it leaves both to the trainer, all cores to
// LibTorch until the engine has measured the split (its pools resize later).
accumulus::engine::ThreadReport ConfigureThreadsOf(const accumulus::v1::TrainerTask& task) {
  if (task.intra_op_threads() <= 0 && task.blas_threads() <= 0) {
    return accumulus::engine::ConfigureThreads(std::max(1, task.cores()), 1);
  }
  return accumulus::engine::ConfigureThreads(task.intra_op_threads(), task.blas_threads());
}

}  // namespace

// `--sweep`: the job's first windows under each usual split, one line each:
// "sweep <micro> <accumulation> <samples per second> <peak bytes>
// <checkpointed samples per second> <checkpointed peak bytes> <intra-op
// threads> <BLAS threads>" (threads 0 0: the task fixed them).
int Sweep(const accumulus::v1::TrainerTask& task) {
  auto config = accumulus::trainer::ToTrainConfig(task);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().message().c_str());
    return 1;
  }
  ConfigureThreadsOf(task);
  const int64_t per_rank = config->micro_batch > 0
                               ? config->micro_batch * config->accumulation_steps
                               : config->global_batch / config->world_size;
  config->micro_batch = per_rank;
  config->accumulation_steps = 1;
  auto rows = accumulus::engine::SweepSplits(*config, accumulus::engine::DefaultSweep(per_rank),
                                             /*windows=*/2);
  if (!rows.ok()) {
    std::fprintf(stderr, "%s\n", rows.status().ToString().c_str());
    return 1;
  }
  for (const auto& r : *rows) {
    std::printf(
        "sweep %lld %lld %.1f %lld %.1f %lld %d %d\n", static_cast<long long>(r.micro_batch),
        static_cast<long long>(r.accumulation_steps), r.samples_per_second,
        static_cast<long long>(r.peak_bytes), r.checkpointed_samples_per_second,
        static_cast<long long>(r.checkpointed_peak_bytes), r.threads.intra_op, r.threads.blas);
  }
  return 0;
}

bool ReadTask(accumulus::v1::TrainerTask* task) {
  google::protobuf::io::FileInputStream stdin_stream(STDIN_FILENO);
  return task->ParseFromZeroCopyStream(&stdin_stream);
}

int main(int argc, char** argv) {
  using accumulus::v1::JobState;
  if (argc > 1 && std::strcmp(argv[1], "--probe-devices") == 0) return ProbeDevices();
  if (argc > 1 && std::strcmp(argv[1], "--sweep") == 0) {
    accumulus::v1::TrainerTask task;
    if (!ReadTask(&task)) {
      std::fprintf(stderr, "accumulus-trainer: no valid TrainerTask on stdin\n");
      return 2;
    }
    return Sweep(task);
  }

  // Die with the daemon: an orphaned rank would hold its device forever.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 1;
  // SIGTERM asks for a stop at the next window boundary; so do SIGINT and
  // SIGHUP, which a terminal sends the whole process group (Ctrl-C, closed).
  struct sigaction action = {};
  action.sa_handler = RequestStop;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);
  struct sigaction bus_error = {};
  bus_error.sa_handler = ExplainBusError;
  bus_error.sa_flags = SA_RESETHAND;
  sigaction(SIGBUS, &bus_error, nullptr);
  accumulus::IgnoreFileSizeLimitSignal();  // a checkpoint past `ulimit -f` warns, as a full disk

  accumulus::v1::TrainerTask task;
  if (!ReadTask(&task)) {
    std::fprintf(stderr, "accumulus-trainer: no valid TrainerTask on stdin\n");
    return 2;
  }
  auto config = accumulus::trainer::ToTrainConfig(task);

  const accumulus::engine::ThreadReport threads = ConfigureThreadsOf(task);
  accumulus::v1::RuntimeInfo runtime;
  runtime.set_intra_op_threads(threads.intra_op_threads);
  runtime.set_inter_op_threads(threads.inter_op_threads);
  runtime.set_blas_threads(threads.blas_threads);
  runtime.set_blas(threads.blas);
  runtime.set_torch_version(TORCH_VERSION);
  runtime.set_rank(task.rank());
  runtime.set_world_size(task.world_size());
  *runtime.mutable_batch() = task.batch();
  runtime.set_pid(getpid());
  runtime.set_partial_window(task.spec().partial_window() ==
                                     accumulus::v1::PARTIAL_WINDOW_UNSPECIFIED
                                 ? accumulus::v1::PARTIAL_WINDOW_NORMALIZE
                                 : task.spec().partial_window());
  accumulus::trainer::ProtoEventSink sink(kEventsFd, runtime,
                                          std::chrono::milliseconds(task.max_event_delay_ms()));

  if (!config.ok()) {
    // Not even a config: the spec's fault, whatever the code.
    accumulus::v1::TrainerExit exit =
        accumulus::trainer::TrainerExitFor(config.status().WithFault(accumulus::Fault::kSpec));
    exit.set_reason(config.status().message());
    exit.set_permanent(true);
    sink.Exit(exit);
    return 0;
  }
  const std::string rank_name =
      accumulus::trainer::DescribeRank(task.job_id(), task.attempt(), task.rank());
  if (task.lease_ms() > 0) {
    accumulus::trainer::StartLeaseWatchdog(kLeaseFd, std::chrono::milliseconds(task.lease_ms()),
                                           rank_name);
  }
  accumulus::trainer::LogRunEvent(rank_name, "training starts");
  accumulus::engine::TrainOptions options;
  options.stop_requested = &stop_requested;
  const accumulus::Status status = accumulus::engine::Train(*config, &sink, options);
  accumulus::trainer::LogRunEvent(
      rank_name, "training stopped: " + (status.ok() ? std::string("done") : status.ToString()));
  sink.Exit(accumulus::trainer::TrainerExitFor(status));
  return 0;
}
