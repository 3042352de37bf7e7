#include "worker/engine/resume.h"

#include <string>
#include <vector>

namespace accumulus::engine {

StatusOr<TrainingState> ResumeFrom(const TrainConfig& config, const RunIdentity& identity,
                                   Model& model, torch::optim::Optimizer& optimizer,
                                   GradientSync* sync, EventSink* sink,
                                   std::unique_ptr<CheckpointStore>* store) {
  TrainingState state;
  if (!config.checkpoint_dir.empty()) {
    *store = std::make_unique<CheckpointStore>(config.checkpoint_dir, config.checkpoint_keep,
                                               config.attempt);
    std::vector<std::string> passed_over;
    StatusOr<TrainingState> loaded = (*store)->LoadLatest(identity, model, optimizer, &passed_over);
    for (const std::string& why : passed_over) {
      sink->OnLog(LogLevel::kWarning, "checkpoint passed over: " + why);
    }
    if (loaded.ok()) {
      state = *loaded;
      sink->OnLog(LogLevel::kInfo, "resuming after step " + std::to_string(state.step) +
                                       " from a checkpoint of attempt " +
                                       std::to_string(state.written_by_attempt) + " in " +
                                       config.checkpoint_dir);
    } else if (loaded.status().code() != StatusCode::kNotFound) {
      return loaded.status();
    }
  }
  if (sync != nullptr) {
    const int64_t lowest = sync->MinAcrossRanks(state.step);
    const int64_t highest = -sync->MinAcrossRanks(-state.step);
    if (lowest != highest) {
      return Status::FailedPrecondition(
          "the ranks found different checkpoints (after steps " + std::to_string(lowest) + " to " +
          std::to_string(highest) + ") in checkpoint dir " + config.checkpoint_dir +
          ": every rank must see the same directory (shared storage when ranks span machines)");
    }
  }
  // Only once every rank has chosen (the collective above): a rank reading
  // the lineage after this entry would see a different history.
  if (*store != nullptr && config.rank == 0) {
    if (Status s = (*store)->RecordStart(state); !s.ok()) {
      return s.WithContext("checkpoint lineage");
    }
  }
  return state;
}

}  // namespace accumulus::engine
