// Where a rank's training starts: the newest checkpoint of its run that the
// job's lineage allows (checkpoint_lineage.h), restored into the model and
// the optimizer, or a fresh start; the same on every rank; and, on rank 0,
// this attempt's start recorded in the lineage, which fences every older
// attempt still running.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "common/status.h"
#include "worker/engine/checkpoint.h"
#include "worker/engine/events.h"
#include "worker/engine/model_factory.h"
#include "worker/engine/process_group_sync.h"
#include "worker/engine/train_config.h"

namespace accumulus::engine {

// The state to resume from (step 0: a fresh start). With a checkpoint dir,
// `*store` is set to this attempt's checkpoint store. FAILED_PRECONDITION
// when this attempt is superseded or the ranks found different checkpoints.
StatusOr<TrainingState> ResumeFrom(const TrainConfig& config, const RunIdentity& identity,
                                   Model& model, torch::optim::Optimizer& optimizer,
                                   GradientSync* sync, EventSink* sink,
                                   std::unique_ptr<CheckpointStore>* store);

}  // namespace accumulus::engine
