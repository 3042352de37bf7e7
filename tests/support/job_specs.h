// Job specs the end-to-end tests share.
#pragma once

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

}  // namespace accumulus::testing
