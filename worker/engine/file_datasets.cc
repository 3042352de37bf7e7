#include "worker/engine/file_datasets.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

std::vector<std::string> SplitFields(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) {
    // Trim spaces and a trailing carriage return (CRLF files).
    const auto begin = field.find_first_not_of(" \t\r");
    const auto end = field.find_last_not_of(" \t\r");
    fields.push_back(begin == std::string::npos ? "" : field.substr(begin, end - begin + 1));
  }
  if (!line.empty() && line.back() == ',') fields.push_back("");
  return fields;
}

bool ParseNumber(const std::string& text, double* value) {
  if (text.empty()) return false;
  char* end = nullptr;
  *value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

// The most classes a job may have: data.outputs' limit (common/job_spec.cc).
constexpr int64_t kMaxClasses = int64_t{1} << 20;

// The classes a label must fall in: those the spec declares, else at most
// kMaxClasses.
int64_t ClassLimit(int64_t declared) { return declared > 0 ? declared : kMaxClasses; }

// What a class label must be, for an error: "a class index from 0 to 9
// (data.outputs 10)".
std::string ExpectedClass(int64_t declared) {
  if (declared <= 0) {
    return "a class index from 0 to " + std::to_string(kMaxClasses - 1) +
           " (or declare data.outputs)";
  }
  return "a class index from 0 to " + std::to_string(declared - 1) + " (data.outputs " +
         std::to_string(declared) + ")";
}

std::string At(const std::string& path, int64_t line) { return path + ":" + std::to_string(line); }

}  // namespace

StatusOr<std::unique_ptr<Dataset>> LoadCsvDataset(const DataConfig& config) {
  StatusOr<std::string> text = ReadFile("data.path", config.path);
  if (!text.ok()) return text.status();
  std::istringstream lines(*text);
  std::string line;
  int64_t line_number = 0;
  std::vector<std::string> header;
  std::vector<std::vector<double>> rows;
  std::vector<int64_t> row_lines;  // each row's line in the file
  size_t columns = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank
    const std::vector<std::string> fields = SplitFields(line);
    std::vector<double> row(fields.size());
    bool numeric = true;
    for (size_t i = 0; i < fields.size() && numeric; ++i) numeric = ParseNumber(fields[i], &row[i]);
    if (!numeric && rows.empty() && header.empty()) {
      header = fields;  // the first line names the columns
      columns = fields.size();
      continue;
    }
    if (columns == 0) columns = fields.size();
    if (fields.size() != columns) {
      return Status::InvalidArgument(At(config.path, line_number) + ": expected " +
                                     std::to_string(columns) + " comma-separated columns, found " +
                                     std::to_string(fields.size()));
    }
    // Never quoting the field: the file may hold what its reader may not
    // see (the error reaches whoever submitted the job).
    for (size_t i = 0; i < fields.size(); ++i) {
      if (!ParseNumber(fields[i], &row[i])) {
        return Status::InvalidArgument(At(config.path, line_number) + ": column " +
                                       std::to_string(i + 1) + ": expected a number");
      }
      if (!std::isfinite(row[i])) {
        return Status::InvalidArgument(At(config.path, line_number) + ": column " +
                                       std::to_string(i + 1) +
                                       ": expected a finite number (not nan, inf or beyond the "
                                       "range of a double)");
      }
    }
    rows.push_back(std::move(row));
    row_lines.push_back(line_number);
  }
  if (rows.empty()) return Status::InvalidArgument(config.path + ": no data rows");
  if (columns < 2) {
    return Status::InvalidArgument(config.path +
                                   ": needs at least 2 columns (features and a label)");
  }

  // The label column: a header name, an index, or the last column.
  int64_t label = static_cast<int64_t>(columns) - 1;
  if (!config.label_column.empty()) {
    double index = 0;
    if (ParseNumber(config.label_column, &index)) {
      label = static_cast<int64_t>(index) < 0
                  ? static_cast<int64_t>(columns) + static_cast<int64_t>(index)
                  : static_cast<int64_t>(index);
    } else {
      label = -1;
      for (size_t i = 0; i < header.size(); ++i) {
        if (header[i] == config.label_column) label = static_cast<int64_t>(i);
      }
    }
    if (label < 0 || label >= static_cast<int64_t>(columns)) {
      return Status::InvalidArgument("data.label_column \"" + config.label_column +
                                     "\" is not a column of " + config.path + " (it has " +
                                     std::to_string(columns) + " columns" +
                                     (header.empty() ? " and no header line)" : ")"));
    }
  }

  const int64_t n = static_cast<int64_t>(rows.size());
  const int64_t features = static_cast<int64_t>(columns) - 1;
  torch::Tensor inputs = torch::empty({n, features}, torch::kFloat32);
  const bool classification = config.task == "classification";
  torch::Tensor targets =
      classification ? torch::empty({n}, torch::kInt64) : torch::empty({n, 1}, torch::kFloat32);
  auto in = inputs.accessor<float, 2>();
  int64_t classes = 0;
  for (int64_t r = 0; r < n; ++r) {
    const std::vector<double>& row = rows[static_cast<size_t>(r)];
    for (int64_t c = 0, f = 0; c < static_cast<int64_t>(columns); ++c) {
      if (c != label) in[r][f++] = static_cast<float>(row[static_cast<size_t>(c)]);
    }
    const double y = row[static_cast<size_t>(label)];
    if (classification) {
      if (y < 0 || y != std::floor(y) || y >= static_cast<double>(ClassLimit(config.outputs))) {
        return Status::InvalidArgument(At(config.path, row_lines[static_cast<size_t>(r)]) +
                                       ": column " + std::to_string(label + 1) +
                                       " (the label): expected " + ExpectedClass(config.outputs));
      }
      targets.accessor<int64_t, 1>()[r] = static_cast<int64_t>(y);
      classes = std::max(classes, static_cast<int64_t>(y) + 1);
    } else {
      targets.accessor<float, 2>()[r][0] = static_cast<float>(y);
    }
  }
  DataShape shape;
  shape.features = features;
  shape.outputs = classification ? std::max(classes, config.outputs) : 1;
  return std::unique_ptr<Dataset>(new TensorDataset(inputs, targets, shape));
}

namespace {

struct IdxArray {
  std::vector<int64_t> dims;
  const uint8_t* data = nullptr;
};

// The IDX header: two zero bytes, a type byte (0x08: unsigned byte), the
// number of dimensions, then each dimension as a big-endian uint32.
StatusOr<IdxArray> ParseIdx(const std::string& field, const std::string& path,
                            const std::string& bytes) {
  auto fail = [&](size_t offset, const std::string& expected) {
    return Status::InvalidArgument(field + " " + path + ": at byte " + std::to_string(offset) +
                                   ": expected " + expected);
  };
  if (bytes.size() < 4) return fail(bytes.size(), "a 4-byte IDX magic number");
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  if (b[0] != 0 || b[1] != 0) return fail(0, "two zero bytes (the IDX magic number)");
  if (b[2] != 0x08) {
    char found[8];
    std::snprintf(found, sizeof found, "0x%02x", b[2]);
    return fail(2, std::string("type 0x08 (unsigned byte), found ") + found);
  }
  const int rank = b[3];
  if (rank < 1) return fail(3, "at least one dimension");
  IdxArray array;
  size_t offset = 4;
  int64_t count = 1;
  for (int d = 0; d < rank; ++d, offset += 4) {
    if (bytes.size() < offset + 4) return fail(offset, "dimension " + std::to_string(d) + " size");
    const int64_t size = (int64_t{b[offset]} << 24) | (int64_t{b[offset + 1]} << 16) |
                         (int64_t{b[offset + 2]} << 8) | int64_t{b[offset + 3]};
    array.dims.push_back(size);
    count *= size;
  }
  if (static_cast<int64_t>(bytes.size() - offset) != count) {
    return fail(offset, std::to_string(count) + " data bytes for dimensions of the header, found " +
                            std::to_string(bytes.size() - offset));
  }
  array.data = b + offset;
  return array;
}

}  // namespace

StatusOr<std::unique_ptr<Dataset>> LoadIdxDataset(const DataConfig& config) {
  StatusOr<std::string> sample_bytes = ReadFile("data.path", config.path);
  if (!sample_bytes.ok()) return sample_bytes.status();
  StatusOr<std::string> label_bytes = ReadFile("data.labels_path", config.labels_path);
  if (!label_bytes.ok()) return label_bytes.status();
  StatusOr<IdxArray> samples = ParseIdx("data.path", config.path, *sample_bytes);
  if (!samples.ok()) return samples.status();
  StatusOr<IdxArray> labels = ParseIdx("data.labels_path", config.labels_path, *label_bytes);
  if (!labels.ok()) return labels.status();
  if (labels->dims.size() != 1 || labels->dims[0] != samples->dims[0]) {
    return Status::InvalidArgument("data.labels_path " + config.labels_path + ": expected " +
                                   std::to_string(samples->dims[0]) +
                                   " labels in one dimension (one per sample of " + config.path +
                                   ")");
  }
  const int64_t n = samples->dims[0];
  std::vector<int64_t> sizes = samples->dims;
  if (sizes.size() == 3) sizes.insert(sizes.begin() + 1, 1);  // images: one channel
  torch::Tensor inputs = torch::from_blob(const_cast<uint8_t*>(samples->data), sizes, torch::kUInt8)
                             .to(torch::kFloat32)
                             .div_(255.0);
  int64_t classes = 0;
  const size_t labels_offset =
      static_cast<size_t>(labels->data - reinterpret_cast<const uint8_t*>(label_bytes->data()));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t y = labels->data[i];
    if (y >= ClassLimit(config.outputs)) {
      return Status::InvalidArgument("data.labels_path " + config.labels_path + ": at byte " +
                                     std::to_string(labels_offset + static_cast<size_t>(i)) +
                                     ": expected " + ExpectedClass(config.outputs));
    }
    classes = std::max(classes, y + 1);
  }
  torch::Tensor targets =
      torch::from_blob(const_cast<uint8_t*>(labels->data), {n}, torch::kUInt8).to(torch::kInt64);
  DataShape shape;
  shape.features = inputs[0].numel();
  shape.outputs = std::max<int64_t>(classes, config.outputs);
  if (sizes.size() == 4 && sizes[2] == sizes[3]) {
    shape.channels = sizes[1];
    shape.image_size = sizes[2];
  }
  return std::unique_ptr<Dataset>(new TensorDataset(inputs, targets, shape));
}

StatusOr<std::unique_ptr<Dataset>> LoadTokenDataset(const DataConfig& config) {
  StatusOr<std::string> bytes = ReadFile("data.path", config.path);
  if (!bytes.ok()) return bytes.status();
  const size_t width = config.token_dtype == "uint16" ? 2 : 1;
  if (bytes->size() % width != 0) {
    return Status::InvalidArgument("data.path " + config.path + ": " +
                                   std::to_string(bytes->size()) +
                                   " bytes is not a whole number of uint16 tokens (at byte " +
                                   std::to_string(bytes->size() - 1) + ")");
  }
  std::vector<int64_t> tokens(bytes->size() / width);
  const auto* b = reinterpret_cast<const uint8_t*>(bytes->data());
  int64_t max_token = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = width == 2 ? int64_t{b[2 * i]} | (int64_t{b[2 * i + 1]} << 8) : int64_t{b[i]};
    max_token = std::max(max_token, tokens[i]);
  }
  const int64_t length = config.sequence_length;
  const int64_t pad = std::max<int64_t>(max_token + 1, width == 2 ? 65536 : 256);
  // Each sample: up to length + 1 tokens (inputs are the first `length`,
  // targets the last `length`).
  std::vector<std::vector<int64_t>> samples;
  auto add_document = [&](size_t begin, size_t end) {
    for (size_t s = begin; s + 1 < end; s += static_cast<size_t>(length)) {
      const size_t e = std::min(end, s + static_cast<size_t>(length) + 1);
      samples.emplace_back(tokens.begin() + static_cast<std::ptrdiff_t>(s),
                           tokens.begin() + static_cast<std::ptrdiff_t>(e));
    }
  };
  if (config.token_layout == "blocks") {
    add_document(0, tokens.size());
  } else {
    size_t begin = 0;
    for (size_t i = 0; i <= tokens.size(); ++i) {
      if (i == tokens.size() || tokens[i] == config.separator) {
        add_document(begin, i);
        begin = i + 1;
      }
    }
  }
  if (samples.empty()) {
    return Status::InvalidArgument("data.path " + config.path +
                                   ": no document of at least 2 tokens");
  }
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
