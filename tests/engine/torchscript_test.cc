// TorchScript models trained by the engine: the same exactness as the
// built-ins, and the trained module written back as TorchScript.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "tests/support/engine_test_support.h"
#include "worker/engine/trainer.h"

namespace accumulus::engine {
namespace {

using Sink = testing::RecordingSink;

class TorchScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // What a user gets from torch.jit.script(net) + torch.jit.save in
    // Python, built here with the same TorchScript compiler.
    torch::manual_seed(3);
    torch::jit::Module net("Net");
    // Parameters require grad, as nn.Parameter does in a scripted nn.Module.
    auto parameter = [](torch::Tensor t) { return t.set_requires_grad(true); };
    net.register_parameter("w1", parameter(torch::randn({6, 12}) * 0.3), false);
    net.register_parameter("b1", parameter(torch::zeros({12})), false);
    net.register_parameter("w2", parameter(torch::randn({12, 3}) * 0.3), false);
    net.register_parameter("b2", parameter(torch::zeros({3})), false);
    net.define(R"(
def forward(self, x):
    return torch.relu(x.matmul(self.w1) + self.b1).matmul(self.w2) + self.b2
)");
    model_path_ = dir_ + "/net.pt";
    net.save(model_path_);
  }

  TrainConfig Config(int64_t micro, int64_t accumulation) {
    TrainConfig c;
    c.model.kind = ModelKind::kTorchScript;
    c.model.path = model_path_;
    c.data.samples = 100;
    c.data.features = 6;
    c.data.outputs = 3;
    c.data.seed = 8;
    c.optimizer.lr = 0.1;
    c.optimizer.momentum = 0.9;
    c.micro_batch = micro;
    c.accumulation_steps = accumulation;
    c.epochs = 2;
    c.seed = 1;
    return c;
  }

  const testing::TempDir temp_;
  const std::string dir_ = temp_.path();
  std::string model_path_;
};

TEST_F(TorchScriptTest, EverySplitTrainsToTheSameModule) {
  std::vector<std::vector<torch::Tensor>> finals;
  for (auto [micro, accumulation] : {std::pair<int64_t, int64_t>{32, 1}, {8, 4}, {4, 8}}) {
    Sink sink;
    std::vector<torch::Tensor> params;
    TrainOptions options;
    options.final_parameters = &params;
    const Status status = Train(Config(micro, accumulation), &sink, options);
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_EQ(sink.steps.size(), 8u);
    finals.push_back(params);
  }
  // Training moved the parameters away from the file's.
  std::vector<torch::Tensor> initial;
  for (const auto& p : torch::jit::load(model_path_).parameters()) initial.push_back(p);
  EXPECT_GT((finals[0][0] - initial[0]).abs().max().item<double>(), 1e-3);
  for (size_t split = 1; split < finals.size(); ++split) {
    for (size_t i = 0; i < finals[0].size(); ++i) {
      const double scale = finals[0][i].abs().max().item<double>();
      EXPECT_LE((finals[split][i] - finals[0][i]).abs().max().item<double>(), 1e-5 * scale);
    }
  }
}

TEST_F(TorchScriptTest, TheTrainedModuleIsSavedAsTorchScript) {
  TrainConfig c = Config(8, 4);
  c.output_path = dir_ + "/trained.pt";
  Sink sink;
  std::vector<torch::Tensor> params;
  TrainOptions options;
  options.final_parameters = &params;
  ASSERT_TRUE(Train(c, &sink, options).ok());
  torch::jit::Module trained = torch::jit::load(c.output_path);
  std::vector<torch::Tensor> saved;
  for (const auto& p : trained.parameters()) saved.push_back(p);
  ASSERT_EQ(saved.size(), params.size());
  for (size_t i = 0; i < saved.size(); ++i) EXPECT_TRUE(torch::equal(saved[i], params[i]));
  // And it still runs.
  EXPECT_EQ(trained.forward({torch::randn({2, 6})}).toTensor().sizes(),
            (std::vector<int64_t>{2, 3}));
}

TEST_F(TorchScriptTest, ANonModuleFileIsRefusedWithItsPath) {
  TrainConfig c = Config(8, 4);
  c.model.path = dir_ + "/not-a-module.pt";
  std::ofstream(c.model.path) << "hello";
  Sink sink;
  const Status status = Train(c, &sink);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find(c.model.path), std::string::npos) << status.message();
}

}  // namespace
}  // namespace accumulus::engine
