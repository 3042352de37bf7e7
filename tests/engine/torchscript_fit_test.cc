// TorchScript modules that do not fit their job fail it before its first
// step as the spec's fault, named with the module's file and both shapes
// (worker/engine/model_output.h); what fits in part (frozen parameters)
// trains; an out-of-memory inside a module stays an out-of-memory.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "tests/support/engine_test_support.h"
#include "worker/engine/trainer.h"

namespace accumulus::engine {
namespace {

using Sink = testing::RecordingSink;

class TorchScriptFitTest : public ::testing::Test {
 protected:
  // A module of two linear maps 6 → 12 → 3 with `forward` as given, saved
  // as torch.jit.save does; `frozen` parameters do not require grad.
  std::string Save(const std::string& name, const std::string& forward,
                   const std::vector<std::string>& frozen = {}) {
    torch::manual_seed(3);
    torch::jit::Module net("Net");
    for (const auto& [parameter, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
             {"w1", {6, 12}}, {"b1", {12}}, {"w2", {12, 3}}, {"b2", {3}}}) {
      const bool trains = std::find(frozen.begin(), frozen.end(), parameter) == frozen.end();
      net.register_parameter(parameter, (torch::randn(shape) * 0.3).set_requires_grad(trains),
                             false);
    }
    net.define(forward);
    const std::string path = dir_ + "/" + name + ".pt";
    net.save(path);
    return path;
  }

  TrainConfig Config(const std::string& path) {
    TrainConfig c;
    c.model.kind = ModelKind::kTorchScript;
    c.model.path = path;
    c.data.samples = 64;
    c.data.features = 6;
    c.data.outputs = 3;
    c.data.seed = 8;
    c.optimizer.lr = 0.1;
    c.micro_batch = 8;
    c.accumulation_steps = 2;
    c.epochs = 1;
    c.seed = 1;
    return c;
  }

  // The job's status, which must be the spec's fault before any step.
  Status Refused(const TrainConfig& c) {
    Sink sink;
    const Status status = Train(c, &sink);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
    EXPECT_EQ(status.fault(), Fault::kSpec) << status.ToString();
    EXPECT_TRUE(sink.steps.empty());
    EXPECT_EQ(status.message().rfind("model.path " + c.model.path + ": the module", 0), 0)
        << status.message();
    return status;
  }

  static constexpr const char* kFits = R"(
def forward(self, x):
    return torch.relu(x.matmul(self.w1) + self.b1).matmul(self.w2) + self.b2
)";

  const testing::TempDir temp_;
  const std::string dir_ = temp_.path();
};

bool Says(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

TEST_F(TorchScriptFitTest, FewerLogitsThanClassesAreRefusedWithBothShapes) {
  TrainConfig c = Config(Save("two-logits", R"(
def forward(self, x):
    return (torch.relu(x.matmul(self.w1) + self.b1).matmul(self.w2) + self.b2)[:, :2]
)"));
  const Status status = Refused(c);
  EXPECT_TRUE(Says(status,
                   "the module's output is [8, 2] for inputs [8, 6]; cross-entropy over the "
                   "data's 3 classes takes logits [8, C], C at least 3"))
      << status.message();
}

TEST_F(TorchScriptFitTest, ARegressionOutputThatWouldBroadcastIsRefused) {
  // [N] against targets [N, 1]: mse_loss would square N × N differences.
  TrainConfig c = Config(Save("flat", R"(
def forward(self, x):
    return (torch.relu(x.matmul(self.w1) + self.b1).matmul(self.w2) + self.b2)[:, 0]
)"));
  c.data.task = DataTask::kRegression;
  c.data.outputs = 1;
  const Status status = Refused(c);
  EXPECT_TRUE(Says(status,
                   "output is [8] for inputs [8, 6]; squared error against the data's 1 "
                   "target(s) per sample takes exactly [8, 1]"))
      << status.message();
}

TEST_F(TorchScriptFitTest, AForwardPassThatFailsIsTheModulesFaultWithTorchsReason) {
  TrainConfig c = Config(Save("wide", kFits));
  c.data.features = 5;
  const Status status = Refused(c);
  EXPECT_TRUE(Says(status, "the module's forward pass fails on inputs [8, 5] (Float): "))
      << status.message();
  EXPECT_TRUE(Says(status, "mat1 and mat2 shapes cannot be multiplied")) << status.message();
}

TEST_F(TorchScriptFitTest, AForwardOfTwoInputsIsRefusedAtLoad) {
  const Status status = Refused(Config(Save("two-inputs", R"(
def forward(self, x, mask):
    return (torch.relu(x.matmul(self.w1) + self.b1).matmul(self.w2) + self.b2) * mask
)")));
  EXPECT_TRUE(Says(status,
                   "the module's forward takes 2 inputs without defaults (x, mask); a job "
                   "passes one"))
      << status.message();
}

TEST_F(TorchScriptFitTest, AForwardThatReturnsATupleIsRefused) {
  const Status status = Refused(Config(Save("tuple", R"(
def forward(self, x):
    h = torch.relu(x.matmul(self.w1) + self.b1)
    return h.matmul(self.w2) + self.b2, h
)")));
  EXPECT_TRUE(Says(status, "the module's forward pass returns a Tuple; the loss takes one tensor"))
      << status.message();
}

TEST_F(TorchScriptFitTest, ATokenModelWhoseEmbeddingMissesTheIdsIsToldTheirRange) {
  // An embedding of 100 rows for bytes and their padding (ids 0 to 256).
  torch::jit::Module net("Lm");
  net.register_parameter("emb", torch::randn({100, 8}).set_requires_grad(true), false);
  net.register_parameter("out", torch::randn({8, 257}).set_requires_grad(true), false);
  net.define(R"(
def forward(self, tokens):
    return torch.embedding(self.emb, tokens).matmul(self.out)
)");
  TrainConfig c = Config(dir_ + "/lm.pt");
  net.save(c.model.path);
  c.data.task = DataTask::kLanguageModeling;
  c.data.sequence_length = 16;
  c.data.min_sequence_length = 4;
  const Status status = Refused(c);
  EXPECT_TRUE(Says(status,
                   "the module's forward pass fails on inputs [8, 16] (Long); its inputs are "
                   "token ids 0 to 256, 256 the padding's: an embedding of 257 rows takes them: "))
      << status.message();
}

TEST_F(TorchScriptFitTest, AModuleWithNothingToTrainIsRefusedAtLoad) {
  const Status status = Refused(Config(Save("frozen", kFits, {"w1", "b1", "w2", "b2"})));
  EXPECT_TRUE(Says(status, "the module has no trainable parameters (none requires grad)"))
      << status.message();
}

TEST_F(TorchScriptFitTest, FrozenParametersStayAsTheFileHasThemAndTheRestTrains) {
  const std::string path = Save("head-only", kFits, {"w1", "b1"});
  Sink sink;
  std::vector<torch::Tensor> trained;
  TrainOptions options;
  options.final_parameters = &trained;
  TrainConfig c = Config(path);
  c.output_path = dir_ + "/trained.pt";
  const Status status = Train(c, &sink, options);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(sink.steps.size(), 4u);
  ASSERT_EQ(trained.size(), 2u) << "w2 and b2";

  const torch::jit::Module before = torch::jit::load(path);
  const torch::jit::Module after = torch::jit::load(c.output_path);
  EXPECT_TRUE(torch::equal(after.attr("w1").toTensor(), before.attr("w1").toTensor()));
  EXPECT_TRUE(torch::equal(after.attr("b1").toTensor(), before.attr("b1").toTensor()));
  EXPECT_TRUE(torch::equal(after.attr("w2").toTensor(), trained[0]));
  EXPECT_GT((after.attr("w2").toTensor() - before.attr("w2").toTensor()).abs().max().item<double>(),
            1e-4);
}

TEST_F(TorchScriptFitTest, AnOutOfMemoryInsideTheModuleShrinksTheMicroBatchAsAnyOther) {
  // An activation of 8 × 6 × 20,000 floats (3.8 MB) at micro 8, a quarter
  // of it at micro 2: the TorchScript interpreter rethrows the budget's
  // refusal as a runtime_error, and the window must still see it as memory.
  TrainConfig c = Config(Save("greedy", R"(
def forward(self, x):
    wide = x.repeat(1, 20000)
    return torch.relu(x.matmul(self.w1) + self.b1).matmul(self.w2) + self.b2 + wide.mean() * 0.0
)"));
  c.memory_limit_bytes = 2'500'000;
  Sink sink;
  const Status status = Train(c, &sink);
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_FALSE(sink.split_changes.empty());
  EXPECT_LT(sink.split_changes.back().micro_batch, 8);
  EXPECT_EQ(sink.steps.size(), 4u);
}

}  // namespace
}  // namespace accumulus::engine
