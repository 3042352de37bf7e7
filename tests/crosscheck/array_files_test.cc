// Array files as their own tools write them, read back by the trainer's
// loaders (with the Python of ACCUMULUS_PYTHON): .npy files by NumPy
// (tests/crosscheck/numpy_files.py) — every numeric dtype, both byte
// orders, C and Fortran order — and safetensors files by the safetensors
// package (tests/crosscheck/safetensors_files.py) — BF16, F16 and the other
// dtypes of numbers, labels beside the samples or in a file of their own.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "tests/support/read_file.h"
#include "tests/support/temp_dir.h"
#include "worker/engine/file_datasets.h"

namespace accumulus::engine {
namespace {

using testing::ReadFile;

// Float32 values written by numpy's tofile (little-endian, C order).
torch::Tensor Floats(const std::string& path) {
  const std::string bytes = ReadFile(path);
  return torch::from_blob(const_cast<char*>(bytes.data()),
                          {static_cast<int64_t>(bytes.size() / sizeof(float))}, torch::kFloat32)
      .clone();
}

// Runs tests/crosscheck/`script` into `dir`: the number of cases it wrote
// (each I with DIR/I-inputs.f32, DIR/I-targets.f32 and DIR/I-task).
int WriteCases(const std::string& script, const std::string& dir) {
  const std::string command = std::string(ACCUMULUS_PYTHON) + " " + ACCUMULUS_SOURCE_DIR +
                              "/tests/crosscheck/" + script + " " + dir + " > " + dir +
                              "/count 2>&1";
  if (std::system(command.c_str()) != 0) {
    ADD_FAILURE() << script << ": " << ReadFile(dir + "/count");
    return 0;
  }
  return std::stoi(ReadFile(dir + "/count"));
}

bool IsRegression(const std::string& prefix) { return ReadFile(prefix + "-task") == "regression"; }

// The data set of case `prefix` holds what its writer says the trainer must
// make of it.
void ExpectCase(const std::string& prefix, const StatusOr<std::unique_ptr<Dataset>>& data) {
  ASSERT_TRUE(data.ok()) << prefix << ": " << data.status().ToString();
  const Batch all = (*data)->Gather(torch::arange((*data)->size()));
  EXPECT_TRUE(torch::equal(all.inputs.reshape(-1), Floats(prefix + "-inputs.f32")))
      << prefix << ": " << all.inputs;
  const torch::Tensor targets = Floats(prefix + "-targets.f32");
  if (IsRegression(prefix)) {
    EXPECT_TRUE(torch::equal(all.targets.reshape(-1), targets)) << prefix << ": " << all.targets;
  } else {
    EXPECT_TRUE(torch::equal(all.targets, targets.to(torch::kInt64)))
        << prefix << ": " << all.targets;
  }
}

TEST(ArrayFiles, EveryNpyDtypeByteOrderAndLayoutReadsAsNumpyWroteIt) {
  const testing::TempDir temp;
  const int cases = WriteCases("numpy_files.py", temp.path());
  ASSERT_GE(cases, 11);
  for (int i = 0; i < cases; ++i) {
    const std::string prefix = temp.path() + "/" + std::to_string(i);
    DataConfig c;
    c.kind = DataKind::kNpy;
    c.path = prefix + "-samples.npy";
    c.labels_path = prefix + "-labels.npy";
    c.task = IsRegression(prefix) ? DataTask::kRegression : DataTask::kClassification;
    ExpectCase(prefix, LoadNpyDataset(c));
  }
}

TEST(ArrayFiles, EverySafetensorsDtypeReadsAsTheSafetensorsPackageWroteIt) {
  const testing::TempDir temp;
  const int cases = WriteCases("safetensors_files.py", temp.path());
  ASSERT_GE(cases, 7);
  for (int i = 0; i < cases; ++i) {
    const std::string prefix = temp.path() + "/" + std::to_string(i);
    DataConfig c;
    c.kind = DataKind::kSafetensors;
    c.path = prefix + ".safetensors";
    // Case 0: the labels are the one tensor of a file of their own; the
    // others: "y" beside the samples (as the spec's defaults set it).
    c.labels_path = i == 0 ? prefix + "-labels.safetensors" : c.path;
    c.array = "x";
    c.labels_array = i == 0 ? "" : "y";
    c.task = IsRegression(prefix) ? DataTask::kRegression : DataTask::kClassification;
    ExpectCase(prefix, LoadSafetensorsDataset(c));
  }
}

}  // namespace
}  // namespace accumulus::engine
