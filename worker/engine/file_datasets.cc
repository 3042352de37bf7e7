#include "worker/engine/file_datasets.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/data/csv_table.h"
#include "common/data/idx_array.h"
#include "common/data/token_samples.h"

namespace accumulus::engine {
namespace {

StatusOr<std::string> ReadFile(const std::string& field, const std::string& path) {
  if (path.empty()) return Status::InvalidArgument(field + " is required");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::NotFound(field + " " + path + ": cannot open (" + std::strerror(errno) + ")");
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

StatusOr<std::unique_ptr<Dataset>> LoadCsvDataset(const DataConfig& config) {
  StatusOr<std::string> text = ReadFile("data.path", config.path);
  if (!text.ok()) return text.status();
  data::CsvConfig csv;
  csv.path = config.path;
  csv.label_column = config.label_column;
  csv.classification = config.task == DataTask::kClassification;
  csv.declared_classes = csv.classification ? config.outputs : 0;
  StatusOr<data::CsvTable> table = data::ParseCsv(*text, csv);
  if (!table.ok()) return table.status();
  const int64_t n = table->rows;
  torch::Tensor inputs =
      torch::from_blob(table->inputs.data(), {n, table->features}, torch::kFloat32).clone();
  torch::Tensor targets = torch::from_blob(table->targets.data(), {n}, torch::kFloat64)
                              .to(csv.classification ? torch::kInt64 : torch::kFloat32);
  if (!csv.classification) targets = targets.reshape({n, 1});
  DataShape shape;
  shape.features = table->features;
  shape.outputs = csv.classification ? table->classes : 1;
  return std::unique_ptr<Dataset>(new TensorDataset(inputs, targets, shape));
}

StatusOr<std::unique_ptr<Dataset>> LoadIdxDataset(const DataConfig& config) {
  StatusOr<std::string> sample_bytes = ReadFile("data.path", config.path);
  if (!sample_bytes.ok()) return sample_bytes.status();
  StatusOr<std::string> label_bytes = ReadFile("data.labels_path", config.labels_path);
  if (!label_bytes.ok()) return label_bytes.status();
  StatusOr<data::IdxArray> samples = data::ParseIdx("data.path", config.path, *sample_bytes);
  if (!samples.ok()) return samples.status();
  StatusOr<data::IdxArray> labels =
      data::ParseIdx("data.labels_path", config.labels_path, *label_bytes);
  if (!labels.ok()) return labels.status();
  StatusOr<int64_t> classes = data::CheckIdxLabels(*labels, samples->dims[0], config.labels_path,
                                                   config.path, config.outputs);
  if (!classes.ok()) return classes.status();
  const int64_t n = samples->dims[0];
  std::vector<int64_t> sizes = samples->dims;
  if (sizes.size() == 3) sizes.insert(sizes.begin() + 1, 1);  // images: one channel
  torch::Tensor inputs = torch::from_blob(const_cast<uint8_t*>(samples->data), sizes, torch::kUInt8)
                             .to(torch::kFloat32)
                             .div_(255.0);
  torch::Tensor targets =
      torch::from_blob(const_cast<uint8_t*>(labels->data), {n}, torch::kUInt8).to(torch::kInt64);
  DataShape shape;
  shape.features = inputs[0].numel();
  shape.outputs = *classes;
  if (sizes.size() == 4 && sizes[2] == sizes[3]) {
    shape.channels = sizes[1];
    shape.image_size = sizes[2];
  }
  return std::unique_ptr<Dataset>(new TensorDataset(inputs, targets, shape));
}

StatusOr<std::unique_ptr<Dataset>> LoadTokenDataset(const DataConfig& config) {
  StatusOr<std::string> bytes = ReadFile("data.path", config.path);
  if (!bytes.ok()) return bytes.status();
  data::TokenConfig tokens;
  tokens.path = config.path;
  tokens.uint16 = config.token_dtype == TokenDtype::kUint16;
  tokens.blocks = config.token_layout == TokenLayout::kBlocks;
  tokens.separator = config.separator;
  tokens.sequence_length = config.sequence_length;
  StatusOr<data::TokenSamples> split = data::SplitTokens(*bytes, tokens);
  if (!split.ok()) return split.status();
  const std::vector<std::vector<int64_t>>& samples = split->samples;
  const int64_t length = config.sequence_length;
  const int64_t pad = std::max<int64_t>(split->max_token + 1, tokens.uint16 ? 65536 : 256);
  const int64_t n = static_cast<int64_t>(samples.size());
  torch::Tensor inputs = torch::full({n, length}, pad, torch::kInt64);
  torch::Tensor targets = torch::full({n, length}, kIgnoreIndex, torch::kInt64);
  auto in = inputs.accessor<int64_t, 2>();
  auto out = targets.accessor<int64_t, 2>();
  for (int64_t r = 0; r < n; ++r) {
    const std::vector<int64_t>& s = samples[static_cast<size_t>(r)];
    for (size_t t = 0; t + 1 < s.size(); ++t) {
      in[r][static_cast<int64_t>(t)] = s[t];
      out[r][static_cast<int64_t>(t)] = s[t + 1];
    }
  }
  DataShape shape;
  shape.sequence_length = length;
  shape.vocabulary = pad + 1;
  shape.pad_token = pad;
  return std::unique_ptr<Dataset>(new TensorDataset(inputs, targets, shape));
}

}  // namespace accumulus::engine
