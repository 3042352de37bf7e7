// .npy files as NumPy itself writes them (tests/crosscheck/numpy_files.py,
// with the numpy of ACCUMULUS_PYTHON), read back by the trainer's loader:
// every numeric dtype, both byte orders, C and Fortran order.
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

TEST(NumpyFiles, EveryDtypeByteOrderAndLayoutReadsAsNumpyWroteIt) {
  const testing::TempDir temp;
  const std::string dir = temp.path();
  const std::string command = std::string(ACCUMULUS_PYTHON) + " " + ACCUMULUS_SOURCE_DIR +
                              "/tests/crosscheck/numpy_files.py " + dir + " > " + dir +
                              "/count 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << ReadFile(dir + "/count");
  const int cases = std::stoi(ReadFile(dir + "/count"));
  ASSERT_GE(cases, 11);
  for (int i = 0; i < cases; ++i) {
    const std::string prefix = dir + "/" + std::to_string(i);
    DataConfig c;
    c.kind = DataKind::kNpy;
    c.path = prefix + "-samples.npy";
    c.labels_path = prefix + "-labels.npy";
    const bool regression = ReadFile(prefix + "-task") == "regression";
    c.task = regression ? DataTask::kRegression : DataTask::kClassification;
    auto data = LoadNpyDataset(c);
    ASSERT_TRUE(data.ok()) << i << ": " << data.status().ToString();
    const Batch all = (*data)->Gather(torch::arange((*data)->size()));
    EXPECT_TRUE(torch::equal(all.inputs.reshape(-1), Floats(prefix + "-inputs.f32")))
        << i << ": " << all.inputs;
    const torch::Tensor targets = Floats(prefix + "-targets.f32");
    if (regression) {
      EXPECT_TRUE(torch::equal(all.targets.reshape(-1), targets)) << i << ": " << all.targets;
    } else {
      EXPECT_TRUE(torch::equal(all.targets, targets.to(torch::kInt64))) << i << ": " << all.targets;
    }
  }
}

}  // namespace
}  // namespace accumulus::engine
