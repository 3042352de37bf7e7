#include "worker/trainer_process.h"

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <unistd.h>

namespace accumulus::worker {

StatusOr<std::unique_ptr<TrainerProcess>> TrainerProcess::Spawn(const Options& options,
                                                                const v1::TrainerTask& task) {
  SpawnOptions spawn;
  spawn.argv = {options.binary};
  spawn.env = options.env;
  spawn.stdin_data = task.SerializeAsString();
  spawn.log_path = options.log_path;
  spawn.message_pipe = true;
  spawn.control_pipe = true;
  StatusOr<std::unique_ptr<Subprocess>> process = Subprocess::Spawn(spawn);
  if (!process.ok()) return process.status();
  return std::unique_ptr<TrainerProcess>(new TrainerProcess(std::move(*process)));
}

void TrainerProcess::RenewLease() {
  const char renewal = 'L';
  // EAGAIN: the pipe is full of renewals the trainer has not read yet.
  (void)!write(process_->control_fd(), &renewal, 1);
}

Status TrainerProcess::ReadMessages(
    const std::function<void(const v1::TrainerMessage&)>& on_message) {
  google::protobuf::io::FileInputStream input(process_->message_fd());
  while (true) {
    v1::TrainerMessage message;
    bool clean_eof = false;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&message, &input, &clean_eof)) {
      if (clean_eof) return Status::Ok();
      return Status::DataLoss("garbled or truncated message from trainer pid " +
                              std::to_string(pid()));
    }
    on_message(message);
  }
}

}  // namespace accumulus::worker
