// Turns the TrainerTask a worker hands over into the engine's TrainConfig,
// checking the spec again: the trainer trusts nothing it did not validate.
#pragma once

#include "accumulus/v1/trainer.pb.h"
#include "common/status.h"
#include "worker/engine/train_config.h"

namespace accumulus::trainer {

StatusOr<engine::TrainConfig> ToTrainConfig(const v1::TrainerTask& task);

}  // namespace accumulus::trainer
