// The trainer's last word: how its training ended, told to its worker as a
// TrainerExit — the state, the reason for people, whether a retry would fail
// the same way, and the failure class for programs.
#pragma once

#include "accumulus/v1/trainer.pb.h"
#include "common/status.h"

namespace accumulus::trainer {

// The exit for training that ended with `status` (OK: succeeded).
v1::TrainerExit TrainerExitFor(const Status& status);

}  // namespace accumulus::trainer
