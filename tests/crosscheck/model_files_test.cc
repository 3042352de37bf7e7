// A torchscript job's model.path, as PyTorch itself writes model files
// (tests/crosscheck/model_files.py, with the torch of ACCUMULUS_PYTHON):
// scripted and traced modules load and train; state dicts, pickled modules,
// torch.export programs, safetensors weights and compressed files are
// refused, each named for what it is (common/model_file.h).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>
#include <string>

#include "tests/support/read_file.h"
#include "tests/support/temp_dir.h"
#include "worker/engine/model_factory.h"

namespace accumulus::engine {
namespace {

using testing::ReadFile;

TEST(ModelFiles, TorchScriptLoadsAndEveryOtherSavedModelIsNamedForWhatItIs) {
  const testing::TempDir temp;
  const std::string dir = temp.path();
  const std::string command = std::string(ACCUMULUS_PYTHON) + " " + ACCUMULUS_SOURCE_DIR +
                              "/tests/crosscheck/model_files.py " + dir + " > " + dir + "/log 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << ReadFile(dir + "/log");
  std::istringstream cases(ReadFile(dir + "/cases"));
  std::string file, expected;
  int loaded = 0, refused = 0;
  while (cases >> file >> expected) {
    SCOPED_TRACE(file);
    for (char& c : expected) c = c == '_' ? ' ' : c;
    DataShape shape;
    shape.features = 6;
    shape.outputs = 3;
    ModelConfig config;
    config.kind = ModelKind::kTorchScript;
    config.path = dir + "/" + file;
    StatusOr<std::unique_ptr<Model>> model = BuildModel(config, shape, LossKind::kCrossEntropy);
    if (expected == "ok") {
      ASSERT_TRUE(model.ok()) << model.status().ToString();
      ++loaded;
      const std::vector<torch::Tensor> parameters = (*model)->Parameters();
      ASSERT_EQ(parameters.size(), 4u);
      const torch::Tensor out = (*model)->Forward(torch::randn({5, 6}));
      EXPECT_EQ(out.sizes(), (std::vector<int64_t>{5, 3}));
      out.sum().backward();
      for (const torch::Tensor& p : parameters) EXPECT_TRUE(p.grad().defined());
      continue;
    }
    ++refused;
    ASSERT_FALSE(model.ok());
    const Status& status = model.status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
    EXPECT_EQ(status.message().rfind("model.path " + config.path + ": ", 0), 0) << status.message();
    EXPECT_NE(status.message().find(expected), std::string::npos) << status.message();
    // Never LibTorch's guess that the file is corrupted.
    EXPECT_EQ(status.message().find("corrupted"), std::string::npos) << status.message();
  }
  EXPECT_EQ(loaded, 2);
  EXPECT_EQ(refused, 6);
}

}  // namespace
}  // namespace accumulus::engine
