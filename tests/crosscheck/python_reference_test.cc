// Cross-implementation check: the same accumulating jobs through accumulus's
// engine and through a plain full-batch loop in Python PyTorch (the torch of
// ACCUMULUS_PYTHON, whose LibTorch the engine links), from the same initial
// weights over the same windows.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <sstream>

#include "common/window_schedule.h"
#include "tests/support/engine_test_support.h"
#include "worker/engine/dataset.h"
#include "worker/engine/model_factory.h"
#include "worker/engine/sample_order.h"
#include "worker/engine/state_dict.h"
#include "worker/engine/trainer.h"

namespace accumulus::engine {
namespace {

using Quiet = testing::RecordingSink;

class PythonReferenceTest : public ::testing::Test {
 protected:
  // Runs reference.py; returns its exit code, its output in *output.
  int Python(const std::string& arguments, std::string* output) {
    const std::string log = dir_ + "/python.log";
    const std::string command = std::string(ACCUMULUS_PYTHON) + " " + ACCUMULUS_SOURCE_DIR +
                                "/tests/crosscheck/reference.py " + arguments + " > " + log +
                                " 2>&1";
    const int status = std::system(command.c_str());
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    *output = text.str();
    return WEXITSTATUS(status);
  }

  // Writes the data set and the windows Train will take, for Python.
  void ExportDataAndWindows(const TrainConfig& c) {
    std::unique_ptr<Dataset> data = *MakeDataset(c.data);
    const Batch all = data->Gather(torch::arange(data->size()));
    c10::Dict<std::string, at::Tensor> tensors;
    tensors.insert("inputs", all.inputs);
    tensors.insert("targets", all.targets);
    Write(dir_ + "/data.pt", torch::pickle_save(c10::IValue(tensors)));

    WindowScheduleConfig sc;
    sc.samples_per_epoch = data->size();
    sc.micro_batch = c.micro_batch;
    sc.accumulation_steps = c.accumulation_steps;
    sc.policy = c.partial_window;
    sc.epochs = c.epochs;
    WindowSchedule schedule(sc);
    c10::Dict<std::string, at::Tensor> windows;
    Window w;
    while (schedule.Next(&w)) {
      std::vector<int64_t> index;
      for (const Segment& s : w.segments) {
        const auto order = EpochPermutation(data->size(), c.seed, s.epoch);
        index.insert(index.end(), order.begin() + s.begin, order.begin() + s.end);
      }
      windows.insert(std::to_string(w.step - 1), torch::tensor(index));
    }
    Write(dir_ + "/windows.pt", torch::pickle_save(c10::IValue(windows)));
  }

  // Each window's noise measurement as the engine reported it, for Python.
  void ExportNoise(const std::vector<StepReport>& steps) {
    const std::vector<std::pair<std::string, double (*)(const StepReport&)>> fields = {
        {"small_batch", [](const StepReport& s) { return s.noise.sample.small_batch; }},
        {"big_batch", [](const StepReport& s) { return s.noise.sample.big_batch; }},
        {"small_sq_norm", [](const StepReport& s) { return s.noise.sample.small_sq_norm; }},
        {"big_sq_norm", [](const StepReport& s) { return s.noise.sample.big_sq_norm; }},
        {"gradient_sq_norm", [](const StepReport& s) { return s.noise.window.gradient_sq_norm; }},
        {"noise_trace", [](const StepReport& s) { return s.noise.window.noise_trace; }},
        {"smoothed_gradient_sq_norm", [](const StepReport& s) { return s.noise.gradient_sq_norm; }},
        {"smoothed_noise_trace", [](const StepReport& s) { return s.noise.noise_trace; }},
    };
    c10::Dict<std::string, at::Tensor> tensors;
    for (const auto& [name, get] : fields) {
      std::vector<double> values;
      for (const StepReport& s : steps) {
        EXPECT_TRUE(s.noise.measured) << "step " << s.step;
        values.push_back(get(s));
      }
      tensors.insert(name, torch::tensor(values, torch::kFloat64));
    }
    Write(dir_ + "/noise.pt", torch::pickle_save(c10::IValue(tensors)));
  }

  // The weights Train will start from (same seed, same order), for Python.
  void ExportInitialWeights(const TrainConfig& c) {
    std::unique_ptr<Dataset> data = *MakeDataset(c.data);
    torch::manual_seed(c.seed);
    std::unique_ptr<Model> initial =
        *BuildModel(c.model, data->shape(), LossOf(c.model.loss, c.data.task));
    ASSERT_TRUE(initial->Save(dir_ + "/initial.pt").ok());
  }

  // A small charlm on documents of 2 to 20 tokens, windows of 16 documents
  // (4 × 4), normalized by the window's tokens.
  TrainConfig RaggedCharLm(int64_t documents) const {
    TrainConfig c;
    c.model.kind = ModelKind::kCharLm;
    c.model.d_model = 32;
    c.model.heads = 4;
    c.model.layers = 1;
    c.data.task = DataTask::kLanguageModeling;
    c.data.samples = documents;
    c.data.sequence_length = 20;
    c.data.min_sequence_length = 2;
    c.data.seed = 6;
    c.optimizer.lr = 0.1;
    c.optimizer.momentum = 0.9;
    c.micro_batch = 4;
    c.accumulation_steps = 4;
    c.epochs = 1;
    c.seed = 4;
    c.output_path = dir_ + "/trained.pt";
    return c;
  }

  static void Write(const std::string& path, const std::vector<char>& bytes) {
    std::ofstream(path, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  const testing::TempDir temp_;
  const std::string dir_ = temp_.path();
};

TEST_F(PythonReferenceTest, TorchScriptMlpExportedFromPython) {
  std::string output;
  ASSERT_EQ(
      Python("export-mlp --out " + dir_ + "/net.pt --features 6 --hidden 16 --classes 3", &output),
      0)
      << output;
  TrainConfig c;
  c.model.kind = ModelKind::kTorchScript;
  c.model.path = dir_ + "/net.pt";
  c.data.samples = 100;  // windows of 32, 32, 32, 4 per epoch
  c.data.features = 6;
  c.data.outputs = 3;
  c.data.seed = 5;
  c.optimizer.lr = 0.1;
  c.optimizer.momentum = 0.9;
  c.micro_batch = 4;
  c.accumulation_steps = 8;
  c.epochs = 2;
  c.seed = 3;
  c.output_path = dir_ + "/trained.pt";
  ExportDataAndWindows(c);
  Quiet sink;
  ASSERT_TRUE(Train(c, &sink).ok());
  EXPECT_EQ(sink.steps.size(), 8u);

  EXPECT_EQ(Python("check --kind torchscript --initial " + dir_ + "/net.pt --data " + dir_ +
                       "/data.pt --windows " + dir_ + "/windows.pt --trained " + dir_ +
                       "/trained.pt --lr 0.1 --momentum 0.9",
                   &output),
            0)
      << output;
  std::cout << "[ python  ] " << output;
}

TEST_F(PythonReferenceTest, CharLmOnRaggedDocumentsWithTokenNormalization) {
  const TrainConfig c = RaggedCharLm(48);  // 3 steps
  ExportDataAndWindows(c);
  ExportInitialWeights(c);
  Quiet sink;
  ASSERT_TRUE(Train(c, &sink).ok());

  std::string output;
  EXPECT_EQ(Python("check --kind charlm --initial " + dir_ + "/initial.pt --data " + dir_ +
                       "/data.pt --windows " + dir_ + "/windows.pt --trained " + dir_ +
                       "/trained.pt --lr 0.1 --momentum 0.9 --vocabulary 257 --max-length 20 "
                       "--d-model 32 --heads 4 --layers 1",
                   &output),
            0)
      << output;
  std::cout << "[ python  ] " << output;
}

// The noise measurement of every window, in tokens, against the same
// estimator written in Python on the same micro-batches and weights.
TEST_F(PythonReferenceTest, TheNoiseScaleOfEachWindowMatchesAnIndependentImplementation) {
  TrainConfig c = RaggedCharLm(96);  // 6 steps
  c.noise_scale_decay = 0.8;
  ExportDataAndWindows(c);
  ExportInitialWeights(c);
  Quiet sink;
  ASSERT_TRUE(Train(c, &sink).ok());
  ASSERT_EQ(sink.steps.size(), 6u);
  ExportNoise(sink.steps);

  std::string output;
  EXPECT_EQ(Python("noise --kind charlm --initial " + dir_ + "/initial.pt --data " + dir_ +
                       "/data.pt --windows " + dir_ + "/windows.pt --trained " + dir_ +
                       "/trained.pt --engine " + dir_ +
                       "/noise.pt --lr 0.1 --momentum 0.9 --micro 4 --decay 0.8 --vocabulary 257 "
                       "--max-length 20 --d-model 32 --heads 4 --layers 1",
                   &output),
            0)
      << output;
  std::cout << "[ python  ] " << output;
}

}  // namespace
}  // namespace accumulus::engine
