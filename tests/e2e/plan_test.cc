// `accumulus plan JOB.yaml`: the batch plan and the steps it makes; with
// --sweep the table users read before choosing a split, measured by a real
// trainer process.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "tests/support/temp_dir.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

// The first line `accumulus plan` prints for a spec of an mlp on `samples`
// samples, global batch 8 in micro-batches of 4, one epoch.
std::string PlanLine(const TempDir& temp, int samples) {
  const std::string spec = temp.path() + "/mlp-" + std::to_string(samples) + ".yaml";
  std::ofstream(spec) << "model: {kind: mlp, hidden: [8]}\n"
                      << "data: {samples: " << samples << ", features: 4, outputs: 2}\n"
                      << "global_batch: 8\nmicro_batch: 4\nepochs: 1\n"
                      << "optimizer: {kind: sgd, lr: 0.1}\n";
  SpawnOptions options;
  options.argv = {BinaryDir() + "/accumulus", "plan", spec};
  options.capture_stdout = true;
  options.log_path = spec + ".stderr";
  auto plan = Subprocess::Spawn(options);
  std::string line;
  if (!plan.ok() || !(*plan)->ReadLine(&line)) return "";
  EXPECT_EQ((*plan)->Wait().exit_code, 0);
  return line;
}

TEST(Plan, CountsTheStepsOfTheEpochsShortLastWindowIncluded) {
  const TempDir temp;
  EXPECT_EQ(PlanLine(temp, 100),
            "global batch 8 = micro 4 × accumulation 2 × devices 1, 13 optimizer steps");
  EXPECT_EQ(PlanLine(temp, 3),
            "global batch 8 = micro 4 × accumulation 2 × devices 1, 1 optimizer step");
}

TEST(PlanSweep, MeasuresEveryUsualSplitOfTheGlobalBatch) {
  const TempDir temp;
  const std::string& dir = temp.path();
  std::ofstream(dir + "/cnn.yaml") << R"(
model: {kind: cnn, hidden: [8, 16], norm: none}
data: {task: image_classification, samples: 256, channels: 3, image_size: 16, outputs: 4}
global_batch: 64
accumulation_steps: 1
optimizer: {kind: sgd, lr: 0.1}
epochs: 1
)";
  SpawnOptions options;
  options.argv = {BinaryDir() + "/accumulus", "plan", dir + "/cnn.yaml", "--sweep"};
  options.capture_stdout = true;
  options.log_path = dir + "/plan.stderr";
  auto plan = Subprocess::Spawn(options);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::vector<std::pair<int, double>> rows;  // micro, samples/s
  int checkpointing_effects = 0;
  std::string line;
  std::smatch m;
  const std::regex row(R"(^(\d+) × (\d+)\s+(\d+)\s)");
  // Then the thread split the trainer measured for the split (the spec
  // leaves threads to it), or "as given" on a one-core machine.
  const std::regex checkpointing(
      R"(peak [+-]\d+%, time [+-]\d+%\s+(intra-op \d+, BLAS \d+|as given)$)");
  while ((*plan)->ReadLine(&line)) {
    if (!std::regex_search(line, m, row)) continue;
    rows.emplace_back(std::stoi(m[1]), std::stod(m[3]));
    checkpointing_effects += std::regex_search(line, checkpointing) ? 1 : 0;
  }
  EXPECT_EQ((*plan)->Wait().exit_code, 0);
  ASSERT_EQ(rows.size(), 4u) << "64×1, 16×4, 4×16, 1×64";
  EXPECT_EQ(rows.front().first, 64);
  EXPECT_EQ(rows.back().first, 1);
  for (const auto& [micro, rate] : rows) EXPECT_GT(rate, 0) << "micro " << micro;
  EXPECT_EQ(checkpointing_effects, 4)
      << "each split measured with activation checkpointing too, and its threads";
}

}  // namespace
}  // namespace accumulus::testing
