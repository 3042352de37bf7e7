#include "worker/engine/file_datasets.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/data/csv_table.h"
#include "common/data/data_file.h"
#include "common/data/idx_array.h"
#include "common/data/npy_array.h"
#include "common/data/numeric_array.h"
#include "common/data/safetensors_file.h"
#include "common/data/shown_name.h"
#include "common/data/token_samples.h"

namespace accumulus::engine {
namespace {

// "data.path mnist.npz: member x_train.npy of a zip archive, …", for the
// job's log, where the file was not read as it lies; "" where it was.
std::string FileReading(const std::string& field, const std::string& path,
                        const data::DataFile& file) {
  return file.reading().empty() ? "" : field + " " + path + ": " + file.reading();
}

std::string Joined(const std::string& a, const std::string& b) {
  return a.empty() || b.empty() ? a + b : a + "; " + b;
}

// The LibTorch dtype whose elements are the file's bytes as they lie, where
// one is: little-endian (as every machine this runs on), aligned, and not an
// unsigned type wider than a byte (LibTorch's are partial).
std::optional<torch::ScalarType> StoredAs(const data::NumericArray& array) {
  const size_t size = data::ElementSize(array.type);
  if ((array.big_endian && size > 1) || reinterpret_cast<uintptr_t>(array.data) % size != 0) {
    return std::nullopt;
  }
  switch (array.type) {
    case data::ElementType::kBool:
      return torch::kBool;
    case data::ElementType::kUint8:
      return torch::kUInt8;
    case data::ElementType::kInt8:
      return torch::kInt8;
    case data::ElementType::kInt16:
      return torch::kInt16;
    case data::ElementType::kInt32:
      return torch::kInt32;
    case data::ElementType::kInt64:
      return torch::kInt64;
    case data::ElementType::kFloat16:
      return torch::kHalf;
    case data::ElementType::kBFloat16:
      return torch::kBFloat16;
    case data::ElementType::kFloat32:
      return torch::kFloat32;
    case data::ElementType::kFloat64:
      return torch::kFloat64;
    default:
      return std::nullopt;
  }
}

// An array's elements as a tensor of its dims and `dtype` (float32 or
// int64), in row-major order whatever the file's: converted by LibTorch
// where the bytes are a tensor already, else element by element.
torch::Tensor ArrayTensor(const data::NumericArray& array, torch::ScalarType dtype) {
  torch::Tensor values;
  if (const std::optional<torch::ScalarType> stored = StoredAs(array)) {
    // Copied even where the dtypes agree: the bytes go with the file's
    // mapping.
    values = torch::from_blob(const_cast<uint8_t*>(array.data), {array.count}, *stored)
                 .to(dtype, /*non_blocking=*/false, /*copy=*/true);
  } else {
    values = torch::empty({array.count}, torch::kFloat64);
    double* out = values.data_ptr<double>();
    for (int64_t i = 0; i < array.count; ++i) out[i] = array[i];
    values = values.to(dtype);
  }
  if (!array.column_major) return values.reshape(array.dims);
  // Stored first dimension fastest: the reversed dims in row-major order.
  const std::vector<int64_t> reversed(array.dims.rbegin(), array.dims.rend());
  std::vector<int64_t> back(array.dims.size());
  for (size_t d = 0; d < back.size(); ++d) back[d] = static_cast<int64_t>(back.size() - 1 - d);
  return values.reshape(reversed).permute(back).contiguous();
}

// An array and the file whose bytes it points into.
struct FileArray {
  std::unique_ptr<data::DataFile> file;
  data::NumericArray array;
  std::string name;     // as errors name it: the file's, with the tensor's
  std::string reading;  // for the job's log: FileReading
};

// The array a whole file (IDX, .npy) or an archive's member holds.
StatusOr<FileArray> ReadArrayFile(const std::string& field, const std::string& path,
                                  data::ArrayParser parse, const data::MemberChoice& member) {
  StatusOr<std::unique_ptr<data::DataFile>> file = data::DataFile::Open(field, path, member);
  if (!file.ok()) return file.status();
  FileArray read;
  read.name = (*file)->name();
  read.reading = FileReading(field, path, **file);
  StatusOr<data::NumericArray> array = parse(field, read.name, (*file)->bytes());
  if (!array.ok()) return array.status();
  read.array = std::move(*array);
  read.file = std::move(*file);
  return read;
}

// The tensor `key` (the spec's `key_field`) of a safetensors file.
StatusOr<FileArray> ReadSafetensor(const std::string& field, const std::string& path,
                                   const std::string& key_field, const std::string& key) {
  StatusOr<std::unique_ptr<data::DataFile>> file = data::DataFile::Open(field, path);
  if (!file.ok()) return file.status();
  StatusOr<data::SafetensorsFile> tensors =
      data::SafetensorsFile::Parse(field, (*file)->name(), (*file)->bytes());
  if (!tensors.ok()) return tensors.status();
  StatusOr<data::NumericArray> array = tensors->Array(key_field, key);
  if (!array.ok()) return array.status();
  FileArray read;
  read.name = (*file)->name() + "[" +
              data::ShownName(key.empty() ? tensors->tensors().front().name : key) + "]";
  read.reading = FileReading(field, path, **file);
  read.array = std::move(*array);
  read.file = std::move(*file);
  return read;
}

// Images given flat, a sample's pixels in one row (MNIST as CSV: 784
// columns; CIFAR-10's 3,072, channel by channel), for image classification:
// square images of one channel, or of three in PyTorch's (and CIFAR's)
// channel-first order. 3 × s² is never a square, so the count tells which.
// Adds to `reading` what was decided.
Status ShapeFlatImages(const std::string& path, torch::Tensor* inputs, DataShape* shape,
                       std::string* reading) {
  const int64_t n = inputs->size(0);
  const int64_t values = inputs->size(1);
  const auto side = [](int64_t area) {
    auto s = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(area))));
    return s * s == area ? s : 0;
  };
  const int64_t channels = side(values) > 0 ? 1 : values % 3 == 0 && side(values / 3) > 0 ? 3 : 0;
  if (channels == 0) {
    return Status::InvalidArgument(
        "data.path " + path + ": " + std::to_string(values) +
        " values per sample are no square image of 1 or 3 channels (784 = 28 × 28, 3072 = 3 × 32 "
        "× 32), which data.task \"image_classification\" takes");
  }
  const int64_t size = side(values / channels);
  *inputs = inputs->reshape({n, channels, size, size});
  shape->channels = channels;
  shape->image_size = size;
  *reading += "; each sample's " + std::to_string(values) + " values are a " +
              std::to_string(channels) + " × " + std::to_string(size) + " × " +
              std::to_string(size) + " image" + (channels == 3 ? " (channel-first)" : "");
  return Status::Ok();
}

// Samples and labels (or targets) from arrays read where they lie in their
// files (mapped, or decompressed): the tensors are the only copy. The
// samples' file is read first, so that its error comes first.
StatusOr<std::unique_ptr<Dataset>> ArrayDataset(
    const DataConfig& config, const std::function<StatusOr<FileArray>()>& read_samples,
    const std::function<StatusOr<FileArray>()>& read_labels) {
  StatusOr<FileArray> samples_read = read_samples();
  if (!samples_read.ok()) return samples_read.status();
  StatusOr<FileArray> labels_read = read_labels();
  if (!labels_read.ok()) return labels_read.status();
  const std::string& samples_name = samples_read->name;
  const std::string& labels_name = labels_read->name;
  const data::NumericArray* samples = &samples_read->array;
  const data::NumericArray* labels = &labels_read->array;
  const int64_t n = samples->dims[0];
  if (samples->count == 0) {
    return Status::InvalidArgument("data.path " + samples_name + ": " +
                                   (n == 0 ? "no samples (the first dimension is 0)"
                                           : "samples of no values (a dimension is 0)"));
  }
  const bool regression = config.task == DataTask::kRegression;
  int64_t outputs = 0;
  bool one_hot = false;
  if (regression) {
    StatusOr<int64_t> targets = data::CheckTargets(*labels, n, labels_name, samples_name);
    if (!targets.ok()) return targets.status();
    outputs = *targets;
    if (config.outputs > 0 && config.outputs != outputs) {
      return Status::InvalidArgument("data.outputs " + std::to_string(config.outputs) +
                                     " is not the " + std::to_string(outputs) +
                                     " target(s) per sample of data.labels_path " + labels_name);
    }
  } else {
    StatusOr<data::ClassLabels> classes =
        data::CheckClassLabels(*labels, n, labels_name, samples_name, config.outputs);
    if (!classes.ok()) return classes.status();
    outputs = classes->classes;
    one_hot = classes->one_hot;
  }
  std::vector<int64_t> sizes = samples->dims;
  if (sizes.size() == 1) sizes.push_back(1);                  // one feature a sample
  if (sizes.size() == 3) sizes.insert(sizes.begin() + 1, 1);  // images: one channel
  // Unsigned bytes are pixels, scaled to [0, 1]; other types are the numbers
  // they hold.
  torch::Tensor inputs = ArrayTensor(*samples, torch::kFloat32).reshape(sizes);
  if (samples->type == data::ElementType::kUint8) inputs.div_(255.0);
  torch::Tensor targets = regression ? ArrayTensor(*labels, torch::kFloat32).reshape({n, outputs})
                          : one_hot  ? ArrayTensor(*labels, torch::kFloat32).argmax(1)
                                     : ArrayTensor(*labels, torch::kInt64).reshape({n});
  DataShape shape;
  shape.features = inputs[0].numel();
  shape.outputs = outputs;
  std::string reading = Joined(samples_read->reading, labels_read->reading);
  const bool images = config.task == DataTask::kImageClassification;
  // Channel-last images, [N, H, W, C] as Keras' datasets and arrays of PIL
  // images hold them (CIFAR-10: [N, 32, 32, 3]), go channel-first. Square
  // [N, C, S, S] is PyTorch's own order, and stays.
  if (images && sizes.size() == 4 && sizes[2] != sizes[3] && sizes[1] == sizes[2] &&
      sizes[3] <= 4) {
    inputs = inputs.permute({0, 3, 1, 2}).contiguous();
    reading += "; its images are channel-last [N, H, W, C], taken channel-first";
  }
  if (inputs.dim() == 4 && inputs.size(2) == inputs.size(3)) {
    shape.channels = inputs.size(1);
    shape.image_size = inputs.size(2);
  } else if (inputs.dim() == 2 && images) {
    if (Status s = ShapeFlatImages(samples_name, &inputs, &shape, &reading); !s.ok()) return s;
  }
  return std::unique_ptr<Dataset>(new TensorDataset(inputs, targets, shape, std::move(reading)));
}

// An array of a .npz archive, chosen by `field`'s key.
data::MemberChoice NpzArray(const char* field, const std::string& key) {
  return {field, key, ".npy", &data::DescribeNpy};
}

// What the job's log says of how a CSV file was read: what the reader
// decided (the header, row names, class names), never what the file holds
// (the log reaches every viewer of the job).
std::string CsvReading(const data::CsvTable& table, const DataConfig& config,
                       const data::DataFile& file) {
  std::string text = "data.path " + config.path + ": ";
  if (!file.reading().empty()) text += file.reading() + "; ";
  text += table.header_line > 0 ? "line " + std::to_string(table.header_line) + " is its header"
                                : "no header line";
  if (config.csv_header == data::CsvHeader::kAuto) {
    text += " (data.header auto; first_line or none settles it)";
  }
  if (table.row_names) text += ", its first column names the rows (skipped)";
  text += "; " + std::to_string(table.rows) + " samples of " + std::to_string(table.features) +
          " features; ";
  if (config.task == DataTask::kRegression) {
    return text + std::to_string(table.targets_per_row) + " target(s)";
  }
  if (!table.class_names.empty()) {
    return text + "labels are " + std::to_string(table.class_names.size()) +
           " class names, numbered in byte order";
  }
  return text + "labels are class indices, " + std::to_string(table.classes) + " classes";
}

}  // namespace

StatusOr<std::unique_ptr<Dataset>> LoadCsvDataset(const DataConfig& config) {
  StatusOr<std::unique_ptr<data::DataFile>> file = data::DataFile::Open("data.path", config.path);
  if (!file.ok()) return file.status();
  data::CsvConfig csv;
  csv.path = (*file)->name();
  csv.label_column = config.label_column;
  csv.label_columns = config.label_columns;
  csv.header = config.csv_header;
  csv.classification = config.task != DataTask::kRegression;
  csv.declared_classes = csv.classification ? config.outputs : 0;
  StatusOr<data::CsvTable> table = data::ParseCsv((*file)->bytes(), csv);
  if (!table.ok()) return table.status();
  const int64_t n = table->rows;
  const int64_t targets_per_row = table->targets_per_row;
  if (!csv.classification && config.outputs > 0 && config.outputs != targets_per_row) {
    return Status::InvalidArgument("data.outputs " + std::to_string(config.outputs) +
                                   " is not the " + std::to_string(targets_per_row) +
                                   " target(s) per row of data.path " + csv.path +
                                   " (one per label column)");
  }
  torch::Tensor inputs =
      torch::from_blob(table->inputs.data(), {n, table->features}, torch::kFloat32).clone();
  torch::Tensor targets =
      torch::from_blob(table->targets.data(), {n, targets_per_row}, torch::kFloat64)
          .to(csv.classification ? torch::kInt64 : torch::kFloat32);
  if (csv.classification) targets = targets.reshape({n});
  DataShape shape;
  shape.features = table->features;
  shape.outputs = csv.classification ? table->classes : targets_per_row;
  std::string reading = CsvReading(*table, config, **file);
  if (config.task == DataTask::kImageClassification) {
    if (Status s = ShapeFlatImages(csv.path, &inputs, &shape, &reading); !s.ok()) return s;
  }
  return std::unique_ptr<Dataset>(new TensorDataset(inputs, targets, shape, std::move(reading)));
}

StatusOr<std::unique_ptr<Dataset>> LoadIdxDataset(const DataConfig& config) {
  return ArrayDataset(
      config, [&] { return ReadArrayFile("data.path", config.path, &data::ParseIdx, {}); },
      [&] { return ReadArrayFile("data.labels_path", config.labels_path, &data::ParseIdx, {}); });
}

StatusOr<std::unique_ptr<Dataset>> LoadNpyDataset(const DataConfig& config) {
  return ArrayDataset(
      config,
      [&] {
        return ReadArrayFile("data.path", config.path, &data::ParseNpy,
                             NpzArray("data.array", config.array));
      },
      [&] {
        return ReadArrayFile("data.labels_path", config.labels_path, &data::ParseNpy,
                             NpzArray("data.labels_array", config.labels_array));
      });
}

StatusOr<std::unique_ptr<Dataset>> LoadSafetensorsDataset(const DataConfig& config) {
  return ArrayDataset(
      config, [&] { return ReadSafetensor("data.path", config.path, "data.array", config.array); },
      [&] {
        return ReadSafetensor("data.labels_path", config.labels_path, "data.labels_array",
                              config.labels_array);
      });
}

namespace {

// Samples built from the mapped file (or its decompressed content) as each
// micro-batch asks for them: the trainer's memory holds the samples' spans
// and the micro-batch, never the corpus as tensors.
class TokenFileDataset final : public Dataset {
 public:
  TokenFileDataset(std::unique_ptr<data::DataFile> file, data::TokenSamples samples, int width,
                   DataShape shape, std::string reading)
      : file_(std::move(file)),
        samples_(std::move(samples)),
        width_(width),
        shape_(shape),
        reading_(std::move(reading)) {}

  int64_t size() const override { return samples_.size(); }
  const DataShape& shape() const override { return shape_; }
  std::string reading() const override { return reading_; }

  // Inputs are a sample's tokens but the last, padded with the pad token;
  // targets the next token, kIgnoreIndex on padding.
  Batch Gather(const torch::Tensor& indices) const override {
    const torch::Tensor order = indices.to(torch::kInt64).contiguous();
    const int64_t n = order.numel();
    const int64_t length = shape_.sequence_length;
    torch::Tensor inputs = torch::full({n, length}, shape_.pad_token, torch::kInt64);
    torch::Tensor targets = torch::full({n, length}, kIgnoreIndex, torch::kInt64);
    const int64_t* index = order.data_ptr<int64_t>();
    int64_t* in = inputs.data_ptr<int64_t>();
    int64_t* out = targets.data_ptr<int64_t>();
    const std::string_view bytes = file_->bytes();
    for (int64_t r = 0; r < n; ++r) {
      TORCH_CHECK(index[r] >= 0 && index[r] < size(), "sample ", index[r], " of a data set of ",
                  size());
      const data::TokenSpan span = samples_[index[r]];
      for (int64_t t = 0; t + 1 < span.length; ++t) {
        in[r * length + t] = data::TokenAt(bytes, width_, span.begin + t);
        out[r * length + t] = data::TokenAt(bytes, width_, span.begin + t + 1);
      }
    }
    return {inputs, targets};
  }

 private:
  std::unique_ptr<data::DataFile> file_;
  data::TokenSamples samples_;
  int width_;  // bytes per id
  DataShape shape_;
  std::string reading_;
};

}  // namespace

StatusOr<std::unique_ptr<Dataset>> LoadTokenDataset(const DataConfig& config) {
  StatusOr<std::unique_ptr<data::DataFile>> file = data::DataFile::Open("data.path", config.path);
  if (!file.ok()) return file.status();
  data::TokenConfig tokens;
  tokens.path = (*file)->name();
  tokens.width = config.token_dtype == TokenDtype::kUint8    ? 1
                 : config.token_dtype == TokenDtype::kUint16 ? 2
                                                             : 4;
  tokens.blocks = config.token_layout == TokenLayout::kBlocks;
  tokens.separator = config.separator;
  tokens.sequence_length = config.sequence_length;
  StatusOr<data::TokenSamples> samples = data::TokenSamples::Index((*file)->bytes(), tokens);
  if (!samples.ok()) return samples.status();
  // The pad token is one past the largest id the dtype can hold, so no id
  // in the file is mistaken for padding; uint32 ids, whose every value no
  // embedding holds, are counted instead (one pass): one past the largest.
  int64_t pad = int64_t{1} << (8 * tokens.width);
  if (tokens.width == 4) {
    StatusOr<int64_t> largest = data::LargestTokenId((*file)->bytes(), tokens);
    if (!largest.ok()) return largest.status();
    pad = *largest + 1;
  }
  DataShape shape;
  shape.sequence_length = config.sequence_length;
  shape.vocabulary = pad + 1;
  shape.pad_token = pad;
  std::string reading = FileReading("data.path", config.path, **file);
  return std::unique_ptr<Dataset>(new TokenFileDataset(std::move(*file), std::move(*samples),
                                                       tokens.width, shape, std::move(reading)));
}

}  // namespace accumulus::engine
