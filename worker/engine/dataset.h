// Data sets the engine trains on, and the micro-batches drawn from them.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/engine/train_config.h"

namespace accumulus::engine {

struct Batch {
  torch::Tensor inputs;
  torch::Tensor targets;
};

// `batch` on `device`. A copy to a GPU is queued from pinned memory and
// returns at once: the host never waits for it inside a window.
Batch ToDevice(Batch batch, const torch::Device& device);

// The label that marks a position no loss is computed for (padding), as
// torch.nn.CrossEntropyLoss's ignore_index.
constexpr int64_t kIgnoreIndex = -100;

// Byte-level text: token ids 0..255 are bytes, kPadToken pads documents.
constexpr int64_t kByteVocabulary = 257;
constexpr int64_t kPadToken = 256;

// What a model needs to know of its data to be built.
struct DataShape {
  int64_t features = 0;  // per sample, flattened
  int64_t outputs = 0;   // classes, or regression targets per sample
  int64_t channels = 0;  // images: [channels, image_size, image_size]
  int64_t image_size = 0;
  int64_t sequence_length = 0;  // tokens
  int64_t vocabulary = 0;
  int64_t pad_token = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual const DataShape& shape() const = 0;
  // The samples at `indices`, in that order, as one batch (a copy: a
  // micro-batch's tensors die with the micro-batch).
  virtual Batch Gather(const torch::Tensor& indices) const = 0;
  // How the file was read where a reader had to decide (a CSV file's
  // header, row names and labels), for the job's log; "" otherwise.
  virtual std::string reading() const { return {}; }
};

// Builds the seeded synthetic data set `config` describes:
// - classification: features ~ N(0, 1), label = argmax of a random linear
//   teacher; regression: targets = the teacher's outputs plus noise;
// - image_classification: N(0, 1) images labelled by the class whose random
//   linear filter responds most;
// - language_modeling: byte documents of random length from a seeded Markov
//   chain, padded to sequence_length; targets are the next byte, with
//   kIgnoreIndex on padding, so each document counts by its real tokens.
StatusOr<std::unique_ptr<Dataset>> MakeSyntheticDataset(const DataConfig& config);

// The data set `config` names: synthetic, or read from files (see
// file_datasets.h). Errors name the file, the line or offset, and what was
// expected there.
StatusOr<std::unique_ptr<Dataset>> MakeDataset(const DataConfig& config);

// A data set held as two tensors indexed along dimension 0.
class TensorDataset final : public Dataset {
 public:
  TensorDataset(torch::Tensor inputs, torch::Tensor targets, DataShape shape,
                std::string reading = {})
      : inputs_(std::move(inputs)),
        targets_(std::move(targets)),
        shape_(shape),
        reading_(std::move(reading)) {}
  int64_t size() const override { return inputs_.size(0); }
  const DataShape& shape() const override { return shape_; }
  Batch Gather(const torch::Tensor& indices) const override;
  std::string reading() const override { return reading_; }

 private:
  torch::Tensor inputs_;
  torch::Tensor targets_;
  DataShape shape_;
  std::string reading_;
};

}  // namespace accumulus::engine
