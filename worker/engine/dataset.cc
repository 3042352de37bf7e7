#include "worker/engine/dataset.h"

#include <ATen/CPUGeneratorImpl.h>

#include "worker/engine/file_datasets.h"

namespace accumulus::engine {
namespace {

// The byte vocabulary of the synthetic text: 16 letters.
constexpr int64_t kLetters = 16;
constexpr int64_t kFirstLetter = 'a';

std::unique_ptr<Dataset> Features(const DataConfig& config, at::Generator& gen) {
  torch::Tensor inputs = at::randn({config.samples, config.features}, gen);
  const torch::Tensor teacher = at::randn({config.features, config.outputs}, gen);
  const torch::Tensor scores = inputs.matmul(teacher);
  torch::Tensor targets = config.task == DataTask::kClassification
                              ? scores.argmax(/*dim=*/1)
                              : scores + config.noise * at::randn(scores.sizes(), gen);
  DataShape shape;
  shape.features = config.features;
  shape.outputs = config.outputs;
  return std::make_unique<TensorDataset>(std::move(inputs), std::move(targets), shape);
}

std::unique_ptr<Dataset> Images(const DataConfig& config, at::Generator& gen) {
  const int64_t n = config.samples;
  torch::Tensor images = at::randn({n, config.channels, config.image_size, config.image_size}, gen);
  // The label is the class whose random linear filter responds most.
  const torch::Tensor filters =
      at::randn({config.outputs, config.channels, config.image_size, config.image_size}, gen);
  const torch::Tensor scores = images.flatten(1).matmul(filters.flatten(1).t());  // [n, classes]
  DataShape shape;
  shape.features = config.channels * config.image_size * config.image_size;
  shape.outputs = config.outputs;
  shape.channels = config.channels;
  shape.image_size = config.image_size;
  return std::make_unique<TensorDataset>(std::move(images), scores.argmax(1), shape);
}

std::unique_ptr<Dataset> Text(const DataConfig& config, at::Generator& gen) {
  const int64_t n = config.samples;
  const int64_t width = config.sequence_length;
  // A sparse, seeded Markov chain over the letters: learnable structure.
  const torch::Tensor transitions =
      torch::softmax(at::randn({kLetters, kLetters}, gen) * 3.0, /*dim=*/1);
  const torch::Tensor lengths = at::randint(config.min_sequence_length, width + 1, {n}, gen);
  const torch::Tensor starts = at::randint(0, kLetters, {n}, gen);
  torch::Tensor inputs = torch::full({n, width}, kPadToken, torch::kInt64);
  torch::Tensor targets = torch::full({n, width}, kIgnoreIndex, torch::kInt64);
  auto in = inputs.accessor<int64_t, 2>();
  auto out = targets.accessor<int64_t, 2>();
  // Draw each document's next letters from the chain, one step for all
  // documents at a time.
  torch::Tensor current = starts.clone();
  const auto length = lengths.accessor<int64_t, 1>();
  for (int64_t t = 0; t < width; ++t) {
    const torch::Tensor next =
        at::multinomial(transitions.index_select(0, current), 1, /*replacement=*/true, gen)
            .squeeze(1);
    const auto cur = current.accessor<int64_t, 1>();
    const auto nxt = next.accessor<int64_t, 1>();
    for (int64_t i = 0; i < n; ++i) {
      if (t >= length[i]) continue;
      in[i][t] = kFirstLetter + cur[i];
      out[i][t] = kFirstLetter + nxt[i];
    }
    current = next;
  }
  DataShape shape;
  shape.sequence_length = width;
  shape.vocabulary = kByteVocabulary;
  shape.pad_token = kPadToken;
  return std::make_unique<TensorDataset>(std::move(inputs), std::move(targets), shape);
}

}  // namespace

Batch TensorDataset::Gather(const torch::Tensor& indices) const {
  return {inputs_.index_select(0, indices), targets_.index_select(0, indices)};
}

StatusOr<std::unique_ptr<Dataset>> MakeDataset(const DataConfig& config) {
  switch (config.kind) {
    case DataKind::kSynthetic:
      return MakeSyntheticDataset(config);
    case DataKind::kCsv:
      return LoadCsvDataset(config);
    case DataKind::kIdx:
      return LoadIdxDataset(config);
    case DataKind::kNpy:
      return LoadNpyDataset(config);
    case DataKind::kTokens:
      return LoadTokenDataset(config);
    case DataKind::kSafetensors:
      return LoadSafetensorsDataset(config);
  }
  return Status::Internal("data.kind: unknown value " +
                          std::to_string(static_cast<int>(config.kind)));
}

StatusOr<std::unique_ptr<Dataset>> MakeSyntheticDataset(const DataConfig& config) {
  // A private generator: the data must not depend on what else drew random
  // numbers in this process (model initialization uses the global one).
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(config.seed);
  switch (config.task) {
    case DataTask::kClassification:
    case DataTask::kRegression:
      return Features(config, gen);
    case DataTask::kImageClassification:
      return Images(config, gen);
    case DataTask::kLanguageModeling:
      return Text(config, gen);
  }
  return Status::Internal("data.task: unknown value " +
                          std::to_string(static_cast<int>(config.task)));
}

Batch ToDevice(Batch batch, const torch::Device& device) {
  if (device.is_cpu()) return batch;
  // From pinned memory the copy is queued on the stream and the host goes on
  // to gather the next micro-batch (from pageable memory it would wait). The
  // caching host allocator keeps each staging block until its copy has run.
  return {batch.inputs.pin_memory().to(device, /*non_blocking=*/true),
          batch.targets.pin_memory().to(device, /*non_blocking=*/true)};
}

}  // namespace accumulus::engine
