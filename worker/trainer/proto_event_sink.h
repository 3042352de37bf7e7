// The engine's EventSink in the trainer process: each report becomes a
// length-delimited TrainerMessage on the pipe to the worker daemon.
#pragma once

#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <memory>

#include "accumulus/v1/trainer.pb.h"
#include "worker/engine/events.h"
#include "worker/engine/thread_setup.h"

namespace accumulus::trainer {

class ProtoEventSink final : public engine::EventSink {
 public:
  // Writes to `fd` (not owned). `runtime` carries what the trainer set up
  // before training (threads, BLAS, rank, batch); OnRun completes it.
  ProtoEventSink(int fd, v1::RuntimeInfo runtime);

  void OnRun(const engine::RunReport& report) override;
  void OnStep(const engine::StepReport& report) override;
  void OnLog(engine::LogLevel level, const std::string& text) override;

  // The trainer's last message.
  void Exit(v1::JobState state, const std::string& reason, bool permanent = false);

 private:
  void Write(const v1::TrainerMessage& message);

  google::protobuf::io::FileOutputStream out_;
  v1::RuntimeInfo runtime_;
};

}  // namespace accumulus::trainer
