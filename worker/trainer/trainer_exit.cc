#include "worker/trainer/trainer_exit.h"

#include "common/failure_class.h"

namespace accumulus::trainer {
namespace {

// Failures a retry would meet again: the spec, the data, the model's fit in
// memory at micro_batch 1, a checkpoint that does not match. A lost peer, a
// collective timeout or a LibTorch error (INTERNAL) may pass on a retry.
bool IsPermanent(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kNotFound:
    case StatusCode::kResourceExhausted:
    case StatusCode::kUnimplemented:
    case StatusCode::kDataLoss:
      return true;
    default:
      return false;
  }
}

}  // namespace

v1::TrainerExit TrainerExitFor(const Status& status) {
  v1::TrainerExit exit;
  if (status.ok()) {
    exit.set_state(v1::JOB_STATE_SUCCEEDED);
    return exit;
  }
  exit.set_failure_class(FailureClassOf(status));
  if (status.code() == StatusCode::kCancelled) {
    exit.set_state(v1::JOB_STATE_CANCELLED);
    exit.set_reason(status.message());
    return exit;
  }
  exit.set_state(v1::JOB_STATE_FAILED);
  exit.set_reason(status.ToString());
  exit.set_permanent(IsPermanent(status));
  return exit;
}

}  // namespace accumulus::trainer
