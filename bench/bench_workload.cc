#include "bench/bench_workload.h"

#include <stdexcept>

#include "worker/engine/tracking_allocator.h"

namespace accumulus::engine {

TrainConfig ModelUnderTest(const std::string& kind) {
  TrainConfig c;
  c.data.samples = kGlobalBatch;
  c.data.seed = 1;
  if (kind == "mlp") {  // 784-1024-1024-10
    c.model.kind = ModelKind::kMlp;
    c.model.hidden = {1024, 1024};
    c.data.features = 784;
    c.data.outputs = 10;
  } else if (kind == "cnn") {  // two conv + BatchNorm blocks on 3×32×32
    c.model.kind = ModelKind::kCnn;
    c.model.hidden = {16, 32};
    c.data.task = DataTask::kImageClassification;
    c.data.channels = 3;
    c.data.image_size = 32;
    c.data.outputs = 10;
  } else if (kind == "charlm") {  // 2 layers, d_model 128, 4 heads, sequences of 128
    c.model.kind = ModelKind::kCharLm;
    c.model.d_model = 128;
    c.model.heads = 4;
    c.model.layers = 2;
    c.data.task = DataTask::kLanguageModeling;
    c.data.sequence_length = 128;
    c.data.min_sequence_length = 128;
  } else {
    throw std::invalid_argument("no benchmark model named \"" + kind + "\"");
  }
  return c;
}

Workload MakeWorkload(const TrainConfig& config, int64_t micro, const torch::Device& device) {
  TrackingCpuAllocator::Install();
  Workload w;
  w.data = *MakeDataset(config.data);
  torch::manual_seed(0);
  w.model = *BuildModel(config.model, w.data->shape(), LossOf(config.model.loss, config.data.task));
  w.model->To(device);
  w.optimizer = std::make_unique<torch::optim::SGD>(w.model->Parameters(),
                                                    torch::optim::SGDOptions(0.01).momentum(0.9));
  for (int64_t b = 0; b < kGlobalBatch; b += micro) {
    const Batch batch = w.data->Gather(torch::arange(b, b + micro));
    w.micro_batches.push_back({batch.inputs.to(device), batch.targets.to(device)});
  }
  return w;
}

}  // namespace accumulus::engine
