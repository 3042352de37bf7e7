// The engine's EventSink in the trainer process: reports become
// length-delimited TrainerMessages on the pipe to the worker daemon.
//
// Step events go out at most one message per `max_delay`: a step reported
// sooner than that after the last message waits (at most `max_delay`) and
// goes with the steps reported meanwhile. A job whose steps take 12 ms
// otherwise costs the worker and the controller a pipe read, two gRPC
// messages and a store transaction per step, on the cores the trainer
// computes on (bench/README.md, orchestration); a job of slower steps waits
// for nothing. Everything else (the run's plan, logs, the exit) goes out at
// once, after what is held, so the order of events never changes.
#pragma once

#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "accumulus/v1/trainer.pb.h"
#include "common/mutex.h"
#include "worker/engine/events.h"

namespace accumulus::trainer {

class ProtoEventSink final : public engine::EventSink {
 public:
  // Writes to `fd` (not owned). `runtime` carries what the trainer set up
  // before training (threads, BLAS, rank, batch); OnRun completes it.
  // `max_delay` zero writes each step event at once.
  ProtoEventSink(int fd, v1::RuntimeInfo runtime,
                 std::chrono::milliseconds max_delay = std::chrono::milliseconds(0));
  ~ProtoEventSink() override;

  void OnRun(const engine::RunReport& report) override;
  void OnStep(const engine::StepReport& report) override;
  void OnSplitChange(const engine::SplitChange& change) override;
  void OnCheckpoint(const engine::CheckpointReport& report) override;
  void OnCheckpointFailed(const engine::CheckpointFailure& failure) override;
  void OnBatchChange(const engine::BatchChange& change) override;
  void OnLog(engine::LogLevel level, const std::string& text) override;

  // The trainer's last message; held events go first.
  void Exit(const v1::TrainerExit& exit);

 private:
  // Queues `event`; `hold` lets it wait for the batch's deadline.
  void Emit(v1::JobEvent event, bool hold) EXCLUDES(mutex_);
  // When what is held must go.
  std::chrono::steady_clock::time_point DueLocked() const REQUIRES(mutex_);
  // Writes what is held (if anything) as one message.
  void WriteHeldLocked() REQUIRES(mutex_);
  void WriteLocked(const v1::TrainerMessage& message) REQUIRES(mutex_);
  // The flusher thread: writes a batch when its oldest event is due.
  void FlushWhenDue() EXCLUDES(mutex_);

  const v1::RuntimeInfo runtime_;
  const std::chrono::milliseconds max_delay_;

  Mutex mutex_;
  CondVar changed_;
  google::protobuf::io::FileOutputStream out_ GUARDED_BY(mutex_);
  v1::TrainerMessage held_ GUARDED_BY(mutex_);  // its `events` batch, not yet written
  // The last message's (or the sink's start): the interval counts from it.
  std::chrono::steady_clock::time_point last_write_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  int64_t last_sequence_ GUARDED_BY(mutex_) = 0;  // JobEvent.rank_sequence

  std::thread flusher_;  // only with a max_delay
};

}  // namespace accumulus::trainer
