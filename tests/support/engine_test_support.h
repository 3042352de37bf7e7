// Shared by the engine tests: an EventSink that records what a run reports,
// tensor comparison, and (from temp_dir.h) a temporary directory.
#pragma once

#include <stdlib.h>
#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "worker/engine/events.h"
#include "worker/engine/trainer.h"

namespace accumulus::testing {

class RecordingSink : public engine::EventSink {
 public:
  void OnRun(const engine::RunReport& r) override { run = r; }
  void OnStep(const engine::StepReport& r) override { steps.push_back(r); }
  void OnSplitChange(const engine::SplitChange& c) override { split_changes.push_back(c); }
  void OnBatchChange(const engine::BatchChange& c) override { batch_changes.push_back(c); }
  void OnLog(engine::LogLevel, const std::string& text) override { logs.push_back(text); }
  void OnCheckpoint(const engine::CheckpointReport& c) override {
    checkpoints.push_back(c);
    EventSink::OnCheckpoint(c);  // and its log line, as a plain sink has
  }
  void OnCheckpointFailed(const engine::CheckpointFailure& f) override {
    checkpoint_failures.push_back(f);
    EventSink::OnCheckpointFailed(f);
  }

  engine::RunReport run;
  std::vector<engine::CheckpointReport> checkpoints;
  std::vector<engine::CheckpointFailure> checkpoint_failures;
  std::vector<engine::StepReport> steps;
  std::vector<engine::SplitChange> split_changes;
  std::vector<engine::BatchChange> batch_changes;
  std::vector<std::string> logs;
};

// One training run's outcome: its status, final parameters and reports.
struct RunOutcome {
  Status status;
  std::vector<torch::Tensor> parameters;
  RecordingSink sink;
  // Every log line, each ended by a newline.
  std::string Logs() const {
    std::string out;
    for (const auto& l : sink.logs) out += l + "\n";
    return out;
  }
};

// Trains `config`, successfully or not (heap-held: the sink is large).
inline std::unique_ptr<RunOutcome> RunTraining(const engine::TrainConfig& config,
                                               engine::TrainOptions options = {}) {
  auto out = std::make_unique<RunOutcome>();
  options.final_parameters = &out->parameters;
  out->status = engine::Train(config, &out->sink, options);
  return out;
}

// Equal bit for bit (and not both empty).
inline bool BitIdentical(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size() || a.empty()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return true;
}

// Trains `config` (which must succeed) and returns the final parameters.
inline std::vector<torch::Tensor> TrainAndCollect(const engine::TrainConfig& config,
                                                  RecordingSink* sink,
                                                  engine::TrainOptions options = {}) {
  std::vector<torch::Tensor> parameters;
  options.final_parameters = &parameters;
  const Status status = engine::Train(config, sink, options);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return parameters;
}

// The largest |a - b| of any pair of tensors, relative to the largest |b| of
// that tensor.
inline double MaxRelativeDifference(const std::vector<torch::Tensor>& a,
                                    const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const double scale = std::max(b[i].abs().max().item<double>(), 1e-12);
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>() / scale);
  }
  return a.size() == b.size() ? worst : 1e300;
}

}  // namespace accumulus::testing
