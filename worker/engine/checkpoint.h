// Checkpoints of a run, taken at window boundaries only: what the loop needs
// to continue exactly where it stopped (parameters and buffers, optimizer
// state, the schedule position, the loss scaler, the RNG, the split in force)
// and what identifies the run (a checkpoint of another job or another data
// order is refused, not silently trained on).
//
// File: step-<N>.attempt-<A>.ckpt, an 8-byte magic, the payload's length
// and FNV-1a 64 checksum, then a LibTorch archive. Replaced durably
// (durable_file.h), so a crash leaves either the old set or the new one; a
// truncated or garbled file is detected by length and checksum and the
// previous checkpoint is used instead.
//
// Fenced by attempt (checkpoint_lineage.h): a store belongs to one attempt
// of the job, names its files with it, writes nothing once a newer attempt
// has started, deletes no newer attempt's file, and resumes only from
// checkpoints on the history the lineage records.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/adaptive_batch.h"
#include "common/noise_scale.h"
#include "common/status.h"
#include "common/window_schedule.h"
#include "worker/engine/checkpoint_lineage.h"
#include "worker/engine/loss_scaler.h"
#include "worker/engine/model_factory.h"
#include "worker/engine/thread_split.h"

namespace accumulus::engine {

// What identifies a run's trajectory: checked on load.
struct RunIdentity {
  // The job that wrote it ("": none, or a checkpoint from before jobs were
  // recorded, which any job of the same trajectory may resume).
  std::string job_id;
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
  // The gradient noise scale's averages.
  NoiseScaleEstimator::State noise;
  // Adaptive accumulation (has_adaptive): the rule's state, and where the
  // stream stands (its windows depend on the decisions, so they cannot be
  // replayed from the config).
  bool has_adaptive = false;
  AdaptiveBatchRule::State adaptive;
  int64_t adaptive_unit = 0;  // the rule's batch_per_accumulation
  SchedulePosition position;
  // The attempt that wrote the checkpoint this state was loaded from.
  int64_t written_by_attempt = 0;
};

class CheckpointStore {
 public:
  // Checkpoints of attempt `attempt` live in `dir` (created when missing);
  // the newest `keep` of its history are kept.
  CheckpointStore(std::string dir, int64_t keep, int64_t attempt);

  // Writes the state after `state.step`; returns the file's path.
  // FAILED_PRECONDITION, writing nothing, once a newer attempt has started.
  StatusOr<std::string> Write(const TrainingState& state, const Model& model,
                              torch::optim::Optimizer& optimizer);

  // Restores the newest checkpoint that reads back whole, belongs to
  // `identity` and lies on the lineage's history into model, optimizer and
  // the global RNG. Files passed over (truncated, garbled, another run's, a
  // superseded attempt's) are described in `skipped`. NOT_FOUND when there
  // is none to resume from; FAILED_PRECONDITION when this attempt is
  // superseded.
  StatusOr<TrainingState> LoadLatest(const RunIdentity& identity, Model& model,
                                     torch::optim::Optimizer& optimizer,
                                     std::vector<std::string>* skipped);

  // Records this attempt's start in the lineage (rank 0, after every rank
  // has chosen the checkpoint it resumes from).
  Status RecordStart(const TrainingState& resumed);

  // OK while no newer attempt has started; FAILED_PRECONDITION naming it
  // and ending with `what` (what this attempt therefore does not do) once
  // one has.
  Status CheckNotSuperseded(const std::string& what) const;

  const std::string& dir() const { return dir_; }

 private:
  struct File {
    int64_t step;
    int64_t attempt;
    std::string path;
  };
  Status CheckNotSuperseded(const CheckpointLineage& lineage, const std::string& what) const;
  // The checkpoint files present, newest step first (then newest attempt).
  std::vector<File> List() const;

  const std::string dir_;
  const int64_t keep_;
  const int64_t attempt_;
};

}  // namespace accumulus::engine
