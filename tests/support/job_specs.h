// Job specs the end-to-end tests share.
#pragma once

#include <string>

namespace accumulus::testing {

// A job that runs in about a second: 200 samples in windows of 32 (8 × 4),
// 7 steps an epoch (the last of 8 samples), 2 epochs: 14 steps.
constexpr char kSmallJob[] = R"(
name: e2e-small
model: {kind: mlp, hidden: [16]}
data: {kind: synthetic, task: classification, samples: 200, features: 8, outputs: 3}
micro_batch: 8
accumulation_steps: 4
optimizer: {kind: sgd, lr: 0.1, momentum: 0.9}
epochs: 2
seed: 1
)";

// A job of 4 steps on one thread of one device: 32 samples in windows of 8
// (4 × 2), one epoch. `model` is the model's YAML mapping; `extra` holds
// whole lines that follow (a budget, restarts, an output).
inline std::string TinyJob(const std::string& model, const std::string& extra = "") {
  return "model: " + model + R"(
data: {samples: 32, features: 8, outputs: 3}
micro_batch: 4
accumulation_steps: 2
epochs: 1
optimizer: {kind: sgd, lr: 0.1}
threads: {intra_op: 1, blas: 1}
)" + extra;
}

// A job of 100 steps an epoch on one thread: a small MLP, 1600 samples in
// windows of 16 (4 × 4). `extra` holds whole lines that follow.
inline std::string LongMlpJob(int epochs, const std::string& extra = "") {
  return R"(model: {kind: mlp, hidden: [32]}
data: {samples: 1600, features: 8, outputs: 3}
micro_batch: 4
accumulation_steps: 4
optimizer: {kind: sgd, lr: 0.05, momentum: 0.9}
threads: {intra_op: 1, blas: 1}
epochs: )" +
         std::to_string(epochs) + "\n" + extra;
}

}  // namespace accumulus::testing
