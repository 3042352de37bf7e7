#include "worker/trainer_supervisor.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

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
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  return tail;
}

v1::WorkerMessage StatusMessage(const std::string& job_id, v1::JobState state,
                                const std::string& reason) {
  v1::WorkerMessage message;
  message.mutable_status()->set_job_id(job_id);
  message.mutable_status()->set_state(state);
  message.mutable_status()->set_reason(reason);
  return message;
}

}  // namespace

struct TrainerSupervisor::Job {
  v1::Assignment assignment;
  std::thread thread;
  // Below: protected by the supervisor's mutex_.
  std::unique_ptr<TrainerProcess> process;
  bool cancel_requested = false;
  std::string cancel_reason;
  bool exited = false;
  std::thread killer;
};

TrainerSupervisor::TrainerSupervisor(SupervisorOptions options, Report report)
    : options_(std::move(options)), report_(std::move(report)) {}

TrainerSupervisor::~TrainerSupervisor() { StopAll(); }

void TrainerSupervisor::Assign(const v1::Assignment& assignment) {
  Reap();
  auto job = std::make_shared<Job>();
  job->assignment = assignment;
  std::lock_guard<std::mutex> lock(mutex_);
  if (jobs_.count(assignment.job_id()) > 0) {
    spdlog::warn("job {} is already running here; ignoring a second assignment",
                 assignment.job_id());
    return;
  }
  jobs_[assignment.job_id()] = job;
  job->thread = std::thread([this, job] { Run(job); });
}

void TrainerSupervisor::Cancel(const std::string& job_id, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  std::shared_ptr<Job> job = it->second;
  if (job->cancel_requested || job->exited) return;
  job->cancel_requested = true;
  job->cancel_reason = reason;
  spdlog::info("job {}: cancelling ({})", job_id, reason);
  if (job->process) job->process->Signal(SIGTERM);
  job->killer = std::thread([this, job] {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool stopped = changed_.wait_for(lock, std::chrono::milliseconds(options_.cancel_grace_ms),
                                           [&] { return job->exited; });
    if (!stopped && job->process) {
      spdlog::warn("job {}: trainer did not stop within {} ms; killing it",
                   job->assignment.job_id(), options_.cancel_grace_ms);
      job->process->Signal(SIGKILL);
    }
  });
}

std::vector<std::string> TrainerSupervisor::RunningJobs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> ids;
  for (const auto& [id, job] : jobs_) ids.push_back(id);
  return ids;
}

void TrainerSupervisor::StopAll() {
  for (const std::string& id : RunningJobs()) Cancel(id, "the worker is shutting down");
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return jobs_.empty(); });
  }
  Reap();
}

void TrainerSupervisor::Reap() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
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

  v1::TrainerTask task;
  task.set_job_id(id);
  *task.mutable_spec() = a.spec();
  *task.mutable_batch() = a.batch();
  task.set_rank(a.ranks_size() > 0 ? a.ranks(0) : 0);
  task.set_world_size(a.world_size());
  const v1::Device device = a.devices_size() > 0 ? a.devices(0) : v1::Device();
  task.set_device(device.kind() == "cuda" ? "cuda:" + std::to_string(device.index()) : "cpu");
  const int intra = a.spec().threads().intra_op() > 0 ? a.spec().threads().intra_op()
                    : options_.intra_op_threads > 0   ? options_.intra_op_threads
                                                      : std::max(1, device.cores());
  const int blas =
      a.spec().threads().blas() > 0 ? a.spec().threads().blas() : options_.blas_threads;
  task.set_intra_op_threads(intra);
  task.set_blas_threads(blas);

  TrainerProcess::Options process_options;
  process_options.binary = options_.trainer_binary;
  process_options.log_path = (dir / ("rank-" + std::to_string(task.rank()) + ".log")).string();
  // Thread counts in the environment too, so the BLAS and OpenMP runtimes
  // start with them (before the trainer's own calls take effect).
  process_options.env = {{"OMP_NUM_THREADS", std::to_string(intra)},
                         {"OPENBLAS_NUM_THREADS", std::to_string(blas)},
                         {"MKL_NUM_THREADS", std::to_string(blas)}};

  v1::JobState final_state = v1::JOB_STATE_FAILED;
  std::string final_reason;
  auto process = TrainerProcess::Spawn(process_options, task);
  if (!process.ok()) {
    final_reason = process.status().message();
  } else {
    TrainerProcess* trainer = process->get();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job->process = std::move(*process);
      if (job->cancel_requested) trainer->Signal(SIGTERM);
    }
    spdlog::info("job {}: trainer pid {} started, log {}", id, trainer->pid(),
                 process_options.log_path);
    report_(StatusMessage(id, v1::JOB_STATE_RUNNING, ""));

    bool has_exit = false;
    v1::TrainerExit exit;
    const Status stream = trainer->ReadMessages([&](const v1::TrainerMessage& m) {
      if (m.has_event()) {
        v1::WorkerMessage message;
        message.mutable_events()->set_job_id(id);
        *message.mutable_events()->add_events() = m.event();
        report_(std::move(message));
      } else if (m.has_exit()) {
        has_exit = true;
        exit = m.exit();
      }
    });
    const Subprocess::ExitInfo info = trainer->Wait();
    bool cancel_requested = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      cancel_requested = job->cancel_requested;
    }
    if (has_exit && info.success) {
      final_state = exit.state();
      final_reason = exit.reason();
    } else if (cancel_requested) {
      final_state = v1::JOB_STATE_CANCELLED;
      final_reason = "trainer stopped on cancel (" + info.description + ")";
    } else {
      final_reason = "trainer pid " + std::to_string(trainer->pid()) + " " + info.description;
      if (!stream.ok()) final_reason += "; " + stream.message();
      if (has_exit && !exit.reason().empty()) final_reason += ": " + exit.reason();
      const std::string tail = LogTail(process_options.log_path);
      if (!tail.empty()) final_reason += "; log " + process_options.log_path + " ends: " + tail;
    }
  }

  std::thread killer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job->exited = true;
    killer.swap(job->killer);
  }
  changed_.notify_all();
  if (killer.joinable()) killer.join();
  report_(StatusMessage(id, final_state, final_reason));

  std::lock_guard<std::mutex> lock(mutex_);
  jobs_.erase(id);
  finished_threads_.push_back(std::move(job->thread));
  changed_.notify_all();
}

}  // namespace accumulus::worker
