#include "worker/trainer_supervisor.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "common/device_name.h"
#include "common/failure_class.h"
#include "common/mutex.h"
#include "common/rank_threads.h"
#include "worker/trainer/lease_watchdog.h"
#include "worker/trainer_process.h"

namespace accumulus::worker {
namespace {

// The end of a trainer's log, for failure reasons a user can act on.
std::string LogTail(const std::string& path, size_t max_bytes = 600) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > static_cast<std::streamoff>(max_bytes)
                                   ? size - static_cast<std::streamoff>(max_bytes)
                                   : 0;
  in.seekg(start);
  std::string tail(static_cast<size_t>(size - start), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  // Whole lines: a cut one reads as a different message.
  if (start > 0) {
    const size_t line = tail.find('\n');
    if (line != std::string::npos && line + 1 < tail.size()) tail.erase(0, line + 1);
  }
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  return tail;
}

v1::WorkerMessage StatusMessage(const v1::Assignment& assignment, v1::JobState state,
                                const std::string& reason, bool permanent = false,
                                v1::FailureClass failure_class = v1::FAILURE_CLASS_UNSPECIFIED) {
  v1::WorkerMessage message;
  message.mutable_status()->set_job_id(assignment.job_id());
  message.mutable_status()->set_attempt(assignment.attempt());
  message.mutable_status()->set_state(state);
  message.mutable_status()->set_reason(reason);
  message.mutable_status()->set_permanent(permanent);
  message.mutable_status()->set_failure_class(failure_class);
  return message;
}

}  // namespace

struct TrainerSupervisor::Job {
  v1::Assignment assignment;
  std::chrono::milliseconds trainer_lease{0};
  std::thread thread;
  std::vector<std::string> log_paths;  // by rank index; set before the ranks start
  int64_t oom_kills_at_start = -1;     // SupervisorOptions::oom_kills; likewise
  // Below: guarded by the supervisor's mutex_, which the analysis cannot
  // name from here; only TrainerSupervisor's *Locked functions and scopes
  // holding its mutex_ touch them.
  std::vector<std::unique_ptr<TrainerProcess>> ranks;  // by index into assignment.ranks
  bool cancel_requested = false;
  bool fenced = false;  // killed because the worker's lease lapsed
  v1::FailureClass fence_class = v1::FAILURE_CLASS_CONTROLLER_UNREACHABLE;  // and why
  bool shutting_down = false;  // stopped because this worker stops (StopAll)
  bool stopping = false;
  bool exited = false;
  std::string first_failure;
  bool first_failure_permanent = false;
  v1::FailureClass first_failure_class = v1::FAILURE_CLASS_UNSPECIFIED;
  std::thread killer;
};

struct TrainerSupervisor::RankOutcome {
  v1::JobState state = v1::JOB_STATE_FAILED;
  std::string reason;
  bool permanent = false;
  v1::FailureClass failure_class = v1::FAILURE_CLASS_TRAINER_CRASHED;
};

TrainerSupervisor::TrainerSupervisor(SupervisorOptions options, Report report)
    : options_(std::move(options)), report_(std::move(report)) {}

TrainerSupervisor::~TrainerSupervisor() { StopAll(); }

void TrainerSupervisor::Assign(const v1::Assignment& assignment,
                               std::chrono::milliseconds trainer_lease) {
  Reap();
  auto job = std::make_shared<Job>();
  job->assignment = assignment;
  job->trainer_lease = trainer_lease;
  {
    MutexLock lock(&mutex_);
    if (!shutting_down_) {
      if (jobs_.count(assignment.job_id()) > 0) {
        spdlog::warn("job {} is already running here; ignoring a second assignment",
                     assignment.job_id());
        return;
      }
      jobs_[assignment.job_id()] = job;
      job->thread = std::thread([this, job] { Run(job); });
      return;
    }
  }
  // Handed back at once (outside the lock: reporting takes the link's), as
  // the jobs that ran here are.
  report_(StatusMessage(assignment, v1::JOB_STATE_FAILED,
                        "worker " + options_.worker_id + " is shutting down; not started",
                        /*permanent=*/false, v1::FAILURE_CLASS_PREEMPTED));
}

void TrainerSupervisor::Cancel(const std::string& job_id, const std::string& reason) {
  MutexLock lock(&mutex_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  if (!it->second->cancel_requested) spdlog::info("job {}: cancelling ({})", job_id, reason);
  it->second->cancel_requested = true;
  StopLocked(it->second);
}

void TrainerSupervisor::StopLocked(const std::shared_ptr<Job>& job) {
  if (job->stopping || job->exited) return;
  job->stopping = true;
  for (auto& rank : job->ranks) rank->Signal(SIGTERM);
  job->killer = std::thread([this, job] {
    MutexLock lock(&mutex_);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.cancel_grace_ms);
    while (!job->exited && changed_.WaitUntil(&mutex_, deadline)) {
    }
    if (job->exited) return;
    spdlog::warn("job {}: trainers did not stop within {} ms; killing them",
                 job->assignment.job_id(), options_.cancel_grace_ms);
    for (auto& rank : job->ranks) rank->Signal(SIGKILL);
  });
}

void TrainerSupervisor::RenewLeases() {
  MutexLock lock(&mutex_);
  for (const auto& [id, job] : jobs_) {
    for (auto& rank : job->ranks) rank->RenewLease();
  }
}

void TrainerSupervisor::Fence(const std::string& reason, v1::FailureClass failure_class) {
  MutexLock lock(&mutex_);
  for (const auto& [id, job] : jobs_) {
    if (job->exited) continue;
    spdlog::warn("job {}: {}; killing its trainers", id, reason);
    if (job->first_failure.empty()) job->first_failure = reason;
    job->fenced = true;
    job->fence_class = failure_class;
    for (auto& rank : job->ranks) rank->Signal(SIGKILL);
  }
}

std::vector<std::string> TrainerSupervisor::RunningJobs() const {
  MutexLock lock(&mutex_);
  std::vector<std::string> ids;
  for (const auto& [id, job] : jobs_) ids.push_back(id);
  return ids;
}

void TrainerSupervisor::StopAll() {
  {
    MutexLock lock(&mutex_);
    shutting_down_ = true;
    for (const auto& [id, job] : jobs_) {
      if (job->exited) continue;
      spdlog::info(
          "job {}: stopping its trainers at the next window boundary (the worker is "
          "shutting down)",
          id);
      job->shutting_down = true;
      StopLocked(job);
    }
  }
  {
    MutexLock lock(&mutex_);
    while (!jobs_.empty()) changed_.Wait(&mutex_);
  }
  Reap();
}

void TrainerSupervisor::Reap() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(&mutex_);
    threads.swap(finished_threads_);
  }
  for (auto& t : threads) t.join();
}

void TrainerSupervisor::Run(std::shared_ptr<Job> job) {
  const v1::Assignment& a = job->assignment;
  const std::string& id = a.job_id();
  const std::filesystem::path dir = std::filesystem::path(options_.work_dir) / id;
  std::error_code ignored;
  std::filesystem::create_directories(dir, ignored);
  if (options_.oom_kills) job->oom_kills_at_start = options_.oom_kills();

  // The spec's paths, confined to this worker's roots, and its thread
  // counts, within its slots' cores: a refusal fails the job permanently (a
  // retry cannot fix the spec), before any rank starts.
  StatusOr<v1::JobSpec> spec = ConfinePaths(a.spec(), options_.roots);
  for (int i = 0; i < a.devices_size() && spec.ok(); ++i) {
    const v1::Device& device = a.devices(i);
    if (device.cores() <= 0) continue;  // not known: nothing to hold it to
    const std::string slot = DeviceName(device) + " on worker " + options_.worker_id;
    if (Status s = CheckThreadsFitSlot(a.spec().threads(), device.cores(), slot); !s.ok()) {
      spec = s;
    }
  }
  std::string spawn_error = spec.ok() ? "" : spec.status().message();
  const bool refused = !spec.ok();
  for (int i = 0; i < a.ranks_size() && spawn_error.empty(); ++i) {
    const v1::Device device = i < a.devices_size() ? a.devices(i) : v1::Device();
    v1::TrainerTask task;
    task.set_job_id(id);
    *task.mutable_spec() = *spec;
    *task.mutable_batch() = a.batch();
    task.set_rank(a.ranks(i));
    task.set_world_size(a.world_size());
    task.set_device(device.kind() == v1::DEVICE_KIND_CUDA ? "cuda:" + std::to_string(device.index())
                                                          : "cpu");
    task.set_rendezvous_host(a.rendezvous_host());
    task.set_rendezvous_port(a.rendezvous_port());
    task.set_local_address(options_.advertise_address);
    const RankThreads threads = ResolveRankThreads(a.spec().threads(), options_.intra_op_threads,
                                                   options_.blas_threads, device.cores());
    task.set_intra_op_threads(threads.intra_op);
    task.set_blas_threads(threads.blas);
    task.set_cores(threads.cores);
    task.set_memory_bytes(device.memory_bytes());
    task.set_max_event_delay_ms(options_.max_event_delay_ms);
    task.set_attempt(a.attempt());
    task.set_lease_ms(static_cast<int32_t>(job->trainer_lease.count()));
    // A rank that measures starts both runtimes with every core, so either
    // pool can take them all.
    const int intra = threads.rank_measures() ? threads.cores : threads.intra_op;
    const int blas = threads.rank_measures() ? threads.cores : threads.blas;

    TrainerProcess::Options process;
    process.binary = options_.trainer_binary;
    process.log_path = (dir / ("rank-" + std::to_string(task.rank()) + ".log")).string();
    // Thread counts in the environment too, so the BLAS and OpenMP runtimes
    // start with them (before the trainer's own calls take effect).
    process.env = {{"OMP_NUM_THREADS", std::to_string(intra)},
                   {"OPENBLAS_NUM_THREADS", std::to_string(blas)},
                   {"MKL_NUM_THREADS", std::to_string(blas)},
                   // glibc otherwise hands large freed blocks back to the
                   // kernel (mmap'd chunks, heap trimming) and every window
                   // faults its activations in again: measured, a cnn job
                   // spent half its time in the kernel and ran at 60% of the
                   // engine's speed; with these it matches it
                   // (bench/README.md). Freed memory stays in the process,
                   // as a caching allocator keeps it.
                   {"MALLOC_MMAP_THRESHOLD_", "4294967296"},
                   {"MALLOC_TRIM_THRESHOLD_", "4294967296"}};
    job->log_paths.push_back(process.log_path);
    auto trainer = TrainerProcess::Spawn(process, task);
    if (!trainer.ok()) {
      spawn_error = "rank " + std::to_string(task.rank()) + " on worker " + options_.worker_id +
                    ": " + trainer.status().message();
      break;
    }
    spdlog::info("job {}: rank {} started as pid {}, log {}", id, task.rank(), (*trainer)->pid(),
                 process.log_path);
    if (options_.metrics) {
      options_.metrics->trainers_started->Increment();
      options_.metrics->trainers_running->Increment();
    }
    MutexLock lock(&mutex_);
    job->ranks.push_back(std::move(*trainer));
    if (job->fenced) job->ranks.back()->Signal(SIGKILL);
    if (job->stopping) job->ranks.back()->Signal(SIGTERM);
  }

  v1::JobState final_state = v1::JOB_STATE_FAILED;
  std::string final_reason = spawn_error;
  bool permanent = refused;
  v1::FailureClass failure_class =
      refused ? FailureClassOf(spec.status()) : v1::FAILURE_CLASS_INTERNAL;
  if (!spawn_error.empty()) {
    MutexLock lock(&mutex_);
    for (auto& rank : job->ranks) rank->Signal(SIGKILL);
  } else {
    report_(StatusMessage(a, v1::JOB_STATE_RUNNING, ""));
    std::vector<RankOutcome> outcomes(job->ranks.size());
    std::vector<std::thread> readers;
    for (size_t i = 0; i < job->ranks.size(); ++i) {
      readers.emplace_back([this, &job, &outcomes, i] { outcomes[i] = Supervise(job.get(), i); });
    }
    for (auto& t : readers) t.join();

    MutexLock lock(&mutex_);
    const bool all_succeeded =
        std::all_of(outcomes.begin(), outcomes.end(),
                    [](const RankOutcome& o) { return o.state == v1::JOB_STATE_SUCCEEDED; });
    if (all_succeeded) {
      final_state = v1::JOB_STATE_SUCCEEDED;
      final_reason.clear();
      failure_class = v1::FAILURE_CLASS_UNSPECIFIED;
    } else if (job->fenced) {
      // The worker's lease lapsed: it lost the controller (or stalled
      // itself), not the job.
      final_reason = job->first_failure;
      failure_class = job->fence_class;
    } else if (job->cancel_requested) {
      final_state = v1::JOB_STATE_CANCELLED;
      final_reason = outcomes.front().reason;
      failure_class = v1::FAILURE_CLASS_CANCELLED;
    } else if (job->shutting_down) {
      // Not the user's cancel: the job moves to another worker, from the
      // checkpoint its ranks wrote as they stopped.
      final_reason =
          "worker " + options_.worker_id + " is shutting down; " + outcomes.front().reason;
      failure_class = v1::FAILURE_CLASS_PREEMPTED;
    } else {
      final_reason = job->first_failure;
      permanent = job->first_failure_permanent;
      failure_class = job->first_failure_class;
    }
  }

  std::thread killer;
  {
    MutexLock lock(&mutex_);
    job->exited = true;
    killer.swap(job->killer);
  }
  changed_.NotifyAll();
  if (killer.joinable()) killer.join();
  {
    // Gone before the status goes out: the controller may assign the job
    // here again (a restart) as soon as it reads it.
    MutexLock lock(&mutex_);
    if (options_.metrics) {
      options_.metrics->trainers_running->Decrement(static_cast<double>(job->ranks.size()));
    }
    jobs_.erase(id);
    finished_threads_.push_back(std::move(job->thread));
  }
  report_(StatusMessage(a, final_state, final_reason, permanent, failure_class));
  changed_.NotifyAll();
}

void TrainerSupervisor::ExplainOomKill(const Job& job, RankOutcome* outcome) const {
  // A SIGKILL this daemon may not have sent (its own — a cancel's grace
  // over, a fence — are not the job's failure, and are not reported as one).
  if (!options_.oom_kills || job.oom_kills_at_start < 0) return;
  const int64_t kills = options_.oom_kills() - job.oom_kills_at_start;
  if (kills <= 0) return;
  outcome->reason +=
      ": most likely by the kernel's OOM killer (this worker's memory cgroup counted " +
      std::to_string(kills) +
      " OOM kill(s) since the job started): its processes needed more memory than "
      "the worker may use; lower micro_batch or memory_limit_bytes, or give the "
      "worker more memory (--cpu-memory-fraction sets CPU slots' share)";
  outcome->failure_class = v1::FAILURE_CLASS_OUT_OF_MEMORY;
}

TrainerSupervisor::RankOutcome TrainerSupervisor::Supervise(Job* job, size_t index) {
  TrainerProcess* trainer = nullptr;
  {
    MutexLock lock(&mutex_);
    trainer = job->ranks[index].get();
  }
  const std::string& id = job->assignment.job_id();
  const int rank = job->assignment.ranks(static_cast<int>(index));
  bool has_exit = false;
  v1::TrainerExit exit;
  const Status stream = trainer->ReadMessages([&](const v1::TrainerMessage& m) {
    if (m.has_events()) {
      // The trainer's batch stays one message to the controller.
      v1::WorkerMessage message;
      message.mutable_events()->set_job_id(id);
      message.mutable_events()->set_attempt(job->assignment.attempt());
      message.mutable_events()->mutable_events()->CopyFrom(m.events().events());
      report_(std::move(message));
    } else if (m.has_exit()) {
      has_exit = true;
      exit = m.exit();
    }
  });
  const Subprocess::ExitInfo info = trainer->Wait();

  RankOutcome outcome;
  if (has_exit && info.success) {
    outcome.state = exit.state();
    outcome.reason = exit.reason();
    outcome.permanent = exit.permanent();
    outcome.failure_class = exit.failure_class();
  } else if (info.exit_code == trainer::kLeaseLapsedExitCode && job->trainer_lease.count() > 0) {
    // Its watchdog ended it: this daemon did not renew its lease in time.
    // A message the exit cut short says nothing more.
    outcome.reason = "trainer pid " + std::to_string(trainer->pid()) + " stopped itself: worker " +
                     options_.worker_id + " did not renew its lease for " +
                     std::to_string(job->trainer_lease.count()) +
                     " ms (the worker daemon was stopped, frozen or starved of CPU)";
    outcome.failure_class = v1::FAILURE_CLASS_WORKER_LOST;
  } else {
    outcome.reason = "trainer pid " + std::to_string(trainer->pid()) + " " + info.description;
    if (!stream.ok()) outcome.reason += "; " + stream.message();
    if (has_exit && !exit.reason().empty()) outcome.reason += ": " + exit.reason();
  }
  if (outcome.state == v1::JOB_STATE_SUCCEEDED) return outcome;

  // A crash: the log's last lines are the best account there is (read
  // before the lock: file I/O never runs under it). A trainer that explained
  // the failure itself ends its log saying the same: the reason says once
  // where the log is.
  const bool crashed = !(has_exit && info.success);
  if (crashed && info.signal == SIGKILL) ExplainOomKill(*job, &outcome);
  const std::string& log = job->log_paths[index];
  const std::string tail = crashed ? LogTail(log) : "";

  MutexLock lock(&mutex_);
  if (job->cancel_requested || job->fenced || job->shutting_down) return outcome;
  if (!tail.empty()) {
    outcome.reason += "; log " + log + " ends: " + tail;
  } else if (!crashed && outcome.state == v1::JOB_STATE_FAILED) {
    outcome.reason += "; log " + log;
  }
  if (job->first_failure.empty()) {
    job->first_failure =
        "rank " + std::to_string(rank) + " on worker " + options_.worker_id + ": " + outcome.reason;
    job->first_failure_permanent = outcome.permanent;
    job->first_failure_class = outcome.failure_class;
    // Its siblings cannot finish without it.
    auto it = jobs_.find(id);
    if (it != jobs_.end()) StopLocked(it->second);
  }
  return outcome;
}

}  // namespace accumulus::worker
