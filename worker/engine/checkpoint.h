// Checkpoints of a run, taken at window boundaries only: what the loop needs
// to continue exactly where it stopped (parameters and buffers, optimizer
// state, the schedule position, the loss scaler, the RNG, the split in force)
// and what identifies the run (a checkpoint of another job or another data
// order is refused, not silently trained on).
//
// File: an 8-byte magic, the payload's length and FNV-1a 64 checksum, then a
// LibTorch archive. Written to a temporary file, fsynced, renamed into place
// and the directory fsynced, so a crash leaves either the old set or the new
// one; a truncated or garbled file is detected by length and checksum and
// the previous checkpoint is used instead.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/engine/loss_scaler.h"
#include "worker/engine/model_factory.h"
#include "worker/engine/thread_split.h"

namespace accumulus::engine {

// What identifies a run's trajectory: checked on load.
struct RunIdentity {
  uint64_t seed = 0;
  int64_t global_batch = 0;
  int64_t samples_per_epoch = 0;
  int64_t parameters = 0;
};

struct TrainingState {
  RunIdentity identity;
  int64_t step = 0;           // windows completed: training resumes at step + 1
  int64_t applied_steps = 0;  // optimizer steps applied (the LR schedule's position)
  int64_t micro_batch = 0;    // the split in force (out-of-memory recovery lowers it)
  int64_t world_size = 1;
  // The measured thread split in force ({0, 0}: fixed by the spec or the
  // worker, or a checkpoint written before splits were recorded).
  ThreadSplit threads;
  bool has_loss_scaler = false;
  LossScaler::State loss_scaler;
};

class CheckpointStore {
 public:
  // Checkpoints live in `dir` (created when missing) as step-<N>.ckpt; the
  // newest `keep` are kept.
  CheckpointStore(std::string dir, int64_t keep);

  // Writes the state after `state.step`; returns the file's path.
  StatusOr<std::string> Write(const TrainingState& state, const Model& model,
                              torch::optim::Optimizer& optimizer);

  // Restores the newest checkpoint that reads back whole and belongs to
  // `identity` into model, optimizer and the global RNG. Files passed over
  // (truncated, garbled, another run's) are described in `skipped`.
  // NOT_FOUND when there is none to resume from.
  StatusOr<TrainingState> LoadLatest(const RunIdentity& identity, Model& model,
                                     torch::optim::Optimizer& optimizer,
                                     std::vector<std::string>* skipped);

  const std::string& dir() const { return dir_; }

 private:
  // step → path of the checkpoint files present, newest first.
  std::vector<std::pair<int64_t, std::string>> List() const;

  const std::string dir_;
  const int64_t keep_;
};

}  // namespace accumulus::engine
