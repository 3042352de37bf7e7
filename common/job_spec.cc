#include "common/job_spec.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/batch_arithmetic.h"
#include "common/data/csv_table.h"
#include "common/enum_names.h"
#include "common/user_text.h"
#include "common/window_schedule.h"

namespace accumulus {
namespace {

// Every violation of one spec, in the order its fields are checked.
class Violations {
 public:
  void Add(std::string field, std::string description) {
    list_.push_back({std::move(field), std::move(description)});
  }
  void Add(Status status, std::string field) {
    if (!status.ok()) Add(std::move(field), status.message());
  }
  // Whether `field` or a field inside it ("model" covers "model.heads") is
  // already wrong: checks that combine fields skip what is.
  bool Any(std::string_view field) const {
    for (const FieldViolation& v : list_) {
      const std::string_view f = v.field;
      if (f == field || (f.size() > field.size() && f.substr(0, field.size()) == field &&
                         (f[field.size()] == '.' || f[field.size()] == '['))) {
        return true;
      }
    }
    return false;
  }
  template <typename... Fields>
  bool AnyOf(Fields... fields) const {
    return (Any(fields) || ...);
  }
  bool empty() const { return list_.empty(); }
  std::vector<FieldViolation> Take() { return std::move(list_); }

 private:
  std::vector<FieldViolation> list_;
};

// A real number as a user would write it: the shortest text that reads back
// as the same double ("0.1", "1e-08", "nan").
std::string Real(double value) {
  char text[32];
  const std::to_chars_result r = std::to_chars(text, text + sizeof text, value);
  return std::string(text, r.ptr);
}

std::string Int(int64_t value) { return std::to_string(value); }

// A closed set's field holds one of its values (after defaults: 0 is "not
// given", a number the enum lacks comes from a client of another version or
// from no client at all).
template <typename Enum>
void CheckNamed(Violations* bad, const std::string& field, Enum value) {
  const google::protobuf::EnumDescriptor& type = EnumTypeOf<Enum>();
  if (IsNamedEnumValue(type, value)) return;
  if (value == 0) {
    bad->Add(field, field + " is required (one of " + EnumValueNames(type) + ")");
  } else {
    bad->Add(field, field + " " + NameOf(value) + " is not one of " + EnumValueNames(type));
  }
}

// `value` as an error quotes it: "adamw".
template <typename Enum>
std::string Quoted(Enum value) {
  return "\"" + NameOf(value) + "\"";
}

void CheckPrintable(Violations* bad, const std::string& field, const std::string& text,
                    size_t max_bytes, const char* what) {
  bad->Add(CheckPrintableText(field, text, max_bytes, what), field);
}

// A numeric field: its limit and how to read it from a spec.
struct LimitedField {
  NumericLimit limit;
  int64_t (*integer)(const v1::JobSpec&);
  double (*real)(const v1::JobSpec&);
};

constexpr double kKi = 1024;
constexpr double kMi = kKi * kKi;

LimitedField Integer(const char* field, double min, double max,
                     int64_t (*get)(const v1::JobSpec&)) {
  return {{field, min, max, false, false, true}, get, nullptr};
}

LimitedField RealIn(const char* field, double min, bool min_open, double max, bool max_open,
                    double (*get)(const v1::JobSpec&)) {
  return {{field, min, max, min_open, max_open, false}, nullptr, get};
}

// Every numeric field's range, after defaults (a 0 that means "derive it"
// or "no limit" is in range). The upper limits are far above real jobs and
// keep one spec from asking a worker for what no machine has.
const std::vector<LimitedField>& LimitedFields() {
  using S = const v1::JobSpec&;
  static const std::vector<LimitedField> fields = {
      Integer("micro_batch", 0, kMi, [](S s) { return s.micro_batch(); }),
      Integer("accumulation_steps", 0, 64 * kKi, [](S s) { return s.accumulation_steps(); }),
      Integer("global_batch", 0, kKi * kMi, [](S s) { return s.global_batch(); }),
      Integer("devices", 1, kKi, [](S s) -> int64_t { return s.devices(); }),
      Integer("devices.min", 0, kKi, [](S s) -> int64_t { return s.min_devices(); }),
      Integer("max_steps", 0, 1e9, [](S s) { return s.max_steps(); }),
      Integer("epochs", 0, 1e6, [](S s) { return s.epochs(); }),
      Integer("base_batch", 0, kKi * kMi, [](S s) { return s.base_batch(); }),
      Integer("nominal_batch", 0, kKi * kMi, [](S s) { return s.nominal_batch(); }),
      Integer("model.d_model", 1, 16 * kKi, [](S s) { return s.model().d_model(); }),
      Integer("model.heads", 1, 256, [](S s) { return s.model().heads(); }),
      Integer("model.layers", 1, 256, [](S s) { return s.model().layers(); }),
      Integer("data.samples", 0, 1e9, [](S s) { return s.data().samples(); }),
      Integer("data.features", 0, kMi, [](S s) { return s.data().features(); }),
      Integer("data.outputs", 0, kMi, [](S s) { return s.data().outputs(); }),
      Integer("data.channels", 1, 64, [](S s) { return s.data().channels(); }),
      Integer("data.image_size", 1, 4 * kKi, [](S s) { return s.data().image_size(); }),
      Integer("data.sequence_length", 1, kMi, [](S s) { return s.data().sequence_length(); }),
      Integer("data.min_sequence_length", 1, kMi,
              [](S s) { return s.data().min_sequence_length(); }),
      Integer("data.separator", 0, 4294967295, [](S s) { return s.data().separator(); }),
      Integer("threads.intra_op", 0, kKi, [](S s) -> int64_t { return s.threads().intra_op(); }),
      Integer("threads.blas", 0, kKi, [](S s) -> int64_t { return s.threads().blas(); }),
      Integer("collective_timeout_seconds", 0, 86400,
              [](S s) -> int64_t { return s.collective_timeout_seconds(); }),
      Integer("loss_scale_growth_interval", 0, 1e6,
              [](S s) -> int64_t { return s.loss_scale_growth_interval(); }),
      Integer("memory_limit_bytes", 0, kMi * kMi * kKi, [](S s) { return s.memory_limit_bytes(); }),
      Integer("checkpoint.every_steps", 0, 1e9, [](S s) { return s.checkpoint().every_steps(); }),
      Integer("checkpoint.keep", 0, 1000, [](S s) { return s.checkpoint().keep(); }),
      Integer("max_restarts", 0, 100, [](S s) -> int64_t { return s.max_restarts(); }),
      Integer("adaptive_batch.min_global_batch", 0, kKi * kMi,
              [](S s) { return s.adaptive_batch().min_global_batch(); }),
      Integer("adaptive_batch.max_global_batch", 0, kKi * kMi,
              [](S s) { return s.adaptive_batch().max_global_batch(); }),
      Integer("adaptive_batch.interval_steps", 0, 1e6,
              [](S s) { return s.adaptive_batch().interval_steps(); }),
      Integer("lr_schedule.warmup_steps", 0, 1e5,
              [](S s) { return s.lr_schedule().warmup_steps(); }),
      RealIn("optimizer.lr", 0, true, 1000, false, [](S s) { return s.optimizer().lr(); }),
      RealIn("optimizer.momentum", 0, false, 1, true, [](S s) { return s.optimizer().momentum(); }),
      RealIn("optimizer.weight_decay", 0, false, 100, false,
             [](S s) { return s.optimizer().weight_decay(); }),
      RealIn("optimizer.beta1", 0, false, 1, true, [](S s) { return s.optimizer().beta1(); }),
      RealIn("optimizer.beta2", 0, false, 1, true, [](S s) { return s.optimizer().beta2(); }),
      RealIn("optimizer.eps", 0, false, 1, false, [](S s) { return s.optimizer().eps(); }),
      RealIn("data.noise", 0, false, 1e6, false, [](S s) { return s.data().noise(); }),
      RealIn("max_grad_norm", 0, false, 1e9, false, [](S s) { return s.max_grad_norm(); }),
      RealIn("bucket_megabytes", 0, false, 4096, false, [](S s) { return s.bucket_megabytes(); }),
      RealIn("initial_loss_scale", 0, false, 4 * kKi * kMi, false,
             [](S s) { return s.initial_loss_scale(); }),
      RealIn("lr_schedule.min_lr_ratio", 0, false, 1, true,
             [](S s) { return s.lr_schedule().min_lr_ratio(); }),
  };
  return fields;
}

// A bound as the field's own kind of number: 1000000000, not 1e+09, for
// a count.
std::string Bound(const NumericLimit& l, double bound) {
  return l.integer ? Int(static_cast<int64_t>(bound)) : Real(bound);
}

}  // namespace

std::string RangeText(const NumericLimit& l) {
  return std::string(l.min_open ? "(" : "[") + Bound(l, l.min) + ", " + Bound(l, l.max) +
         (l.max_open ? ")" : "]");
}

namespace {

// What a value under a field's minimum must be instead.
std::string BelowMinimum(const NumericLimit& l) {
  if (l.integer && l.min == 0) return "must not be negative";
  if (l.integer && l.min == 1) return "must be positive";
  if (l.min == 0) return l.min_open ? "must be a positive number" : "must be zero or positive";
  return (l.min_open ? "must be more than " : "must be at least ") + Bound(l, l.min);
}

// `where` narrows when the field is required (" for synthetic data").
std::string RequiredPositive(const std::string& field, const std::string& where = "") {
  return field + " is required" + where + ": a positive number (got 0, or none)";
}

void CheckLimit(Violations* bad, const LimitedField& f, const v1::JobSpec& spec) {
  const NumericLimit& l = f.limit;
  const double value = f.integer ? static_cast<double>(f.integer(spec)) : f.real(spec);
  const std::string text = f.integer ? Int(f.integer(spec)) : Real(value);
  const std::string field = l.field;
  if (std::isnan(value)) {
    bad->Add(field, field + " " + text + " is not a number; it must be in " + RangeText(l));
  } else if (l.max_open && (value < l.min || value >= l.max)) {
    bad->Add(field, field + " " + text + " must be in " + RangeText(l));
  } else if (l.min_open && l.min == 0 && value == 0) {
    // Zero is how a spec says nothing: the one value the field cannot take
    // is also what a forgotten field reads as.
    bad->Add(field, RequiredPositive(field));
  } else if (value < l.min || (l.min_open && value == l.min)) {
    bad->Add(field, field + " " + text + " " + BelowMinimum(l));
  } else if (value > l.max) {
    bad->Add(field, field + " " + text + " exceeds the limit " + Bound(l, l.max));
  }
}

// The data task each model kind trains on; UNSPECIFIED for mlp
// (classification or regression) and torchscript (any).
v1::DataTask TaskOf(v1::ModelKind model) {
  if (model == v1::MODEL_KIND_CNN) return v1::DATA_TASK_IMAGE_CLASSIFICATION;
  if (model == v1::MODEL_KIND_CHARLM) return v1::DATA_TASK_LANGUAGE_MODELING;
  return v1::DATA_TASK_UNSPECIFIED;
}

bool IsClassification(v1::DataTask task) {
  return task == v1::DATA_TASK_CLASSIFICATION || task == v1::DATA_TASK_IMAGE_CLASSIFICATION;
}

void DefaultModel(v1::ModelSpec* model) {
  if (model->norm() == v1::NORM_LAYER_UNSPECIFIED) model->set_norm(v1::NORM_LAYER_BATCH);
  if (model->d_model() == 0) model->set_d_model(128);
  if (model->heads() == 0) model->set_heads(4);
  if (model->layers() == 0) model->set_layers(2);
}

void CheckModel(Violations* bad, const v1::ModelSpec& model) {
  CheckNamed(bad, "model.kind", model.kind());
  if (model.kind() == v1::MODEL_KIND_TORCHSCRIPT && model.path().empty()) {
    bad->Add("model.path", "model.path is required for model.kind \"torchscript\"");
  }
  if (model.kind() == v1::MODEL_KIND_TORCHSCRIPT && model.activation_checkpointing()) {
    bad->Add("model.activation_checkpointing",
             "model.activation_checkpointing is for the built-in models; a TorchScript module "
             "checkpoints inside its own forward (torch.utils.checkpoint before export)");
  }
  if (model.loss() != v1::LOSS_UNSPECIFIED) CheckNamed(bad, "model.loss", model.loss());
  CheckNamed(bad, "model.norm", model.norm());
  if (!bad->AnyOf("model.d_model", "model.heads") && model.d_model() % model.heads() != 0) {
    bad->Add("model.heads", "model.d_model " + Int(model.d_model()) +
                                " is not divisible by model.heads " + Int(model.heads()));
  }
  if (model.hidden_size() > kMaxHiddenLayers) {
    bad->Add("model.hidden", "model.hidden has " + std::to_string(model.hidden_size()) +
                                 " layers; at most " + std::to_string(kMaxHiddenLayers));
  } else {
    for (int i = 0; i < model.hidden_size(); ++i) {
      const std::string field = "model.hidden[" + std::to_string(i) + "]";
      if (model.hidden(i) <= 0) {
        bad->Add(field, field + " " + Int(model.hidden(i)) + " must be positive");
      } else if (model.hidden(i) > 64 * kKi) {
        bad->Add(field, field + " " + Int(model.hidden(i)) + " exceeds the limit 65536");
      }
    }
  }
}

void DefaultData(v1::DataSpec* data, const v1::ModelSpec& model, uint64_t job_seed) {
  if (data->kind() == v1::DATA_KIND_UNSPECIFIED) data->set_kind(v1::DATA_KIND_SYNTHETIC);
  if (data->token_dtype() == v1::TOKEN_DTYPE_UNSPECIFIED) {
    data->set_token_dtype(v1::TOKEN_DTYPE_UINT8);
  }
  if (data->token_layout() == v1::TOKEN_LAYOUT_UNSPECIFIED) {
    data->set_token_layout(v1::TOKEN_LAYOUT_DOCUMENTS);
  }
  if (data->kind() == v1::DATA_KIND_CSV && data->header() == v1::CSV_HEADER_UNSPECIFIED) {
    data->set_header(v1::CSV_HEADER_AUTO);
  }
  // An array of the samples' .npz archive holds the labels; a safetensors
  // file holds them beside the samples unless another is named.
  if (data->labels_path().empty() &&
      ((data->kind() == v1::DATA_KIND_NPY && !data->labels_array().empty()) ||
       data->kind() == v1::DATA_KIND_SAFETENSORS)) {
    data->set_labels_path(data->path());
  }
  if (data->kind() == v1::DATA_KIND_TOKENS && data->task() == v1::DATA_TASK_UNSPECIFIED) {
    data->set_task(v1::DATA_TASK_LANGUAGE_MODELING);
  }
  if (data->task() == v1::DATA_TASK_UNSPECIFIED) {
    const v1::DataTask task = TaskOf(model.kind());
    data->set_task(task != v1::DATA_TASK_UNSPECIFIED ? task : v1::DATA_TASK_CLASSIFICATION);
  }
  const bool classification = IsClassification(data->task());
  // A file's classes are its labels' unless the spec declares them (then a
  // label outside them is an error, with the file and line).
  // Its targets per sample too: a CSV file's label columns, an array's
  // second dimension (a default of 1 would refuse [N, M] targets).
  if (data->outputs() == 0 && data->kind() == v1::DATA_KIND_SYNTHETIC) {
    data->set_outputs(classification ? 10 : 1);
  }
  if (data->channels() == 0) data->set_channels(3);
  if (data->image_size() == 0) data->set_image_size(32);
  if (data->sequence_length() == 0) data->set_sequence_length(64);
  if (data->min_sequence_length() == 0) {
    data->set_min_sequence_length(std::min<int64_t>(8, data->sequence_length()));
  }
  // A data seed distinct from the init seed, yet fixed by the job seed.
  if (data->seed() == 0) data->set_seed(job_seed ^ 0x9E3779B97F4A7C15ULL);
}

// data.label_column or data.label_columns: names of a CSV file's columns,
// several only as regression targets (one output each).
void CheckLabelColumns(Violations* bad, const v1::DataSpec& data) {
  CheckPrintable(bad, "data.label_column", data.label_column(), kMaxColumnNameBytes,
                 "a column name");
  const int count = data.label_columns_size();
  if (!data.label_column().empty() && count > 0) {
    bad->Add("data.label_columns",
             "give data.label_column (one label) or data.label_columns (several targets), not "
             "both");
  }
  const bool named = !data.label_column().empty() || count > 0;
  if (named && !bad->Any("data.kind") && data.kind() != v1::DATA_KIND_CSV) {
    bad->Add(count > 0 ? "data.label_columns" : "data.label_column",
             std::string(count > 0 ? "data.label_columns" : "data.label_column") +
                 " applies to data.kind \"csv\" only, not " + Quoted(data.kind()));
  }
  if (data.header() != v1::CSV_HEADER_UNSPECIFIED && !bad->Any("data.kind") &&
      data.kind() != v1::DATA_KIND_CSV) {
    bad->Add("data.header",
             "data.header applies to data.kind \"csv\" only, not " + Quoted(data.kind()));
  }
  if (data.header() == v1::CSV_HEADER_NONE) {
    // Without a header line a column has no name to be found by.
    const auto by_index = [&](const std::string& field, const std::string& column) {
      if (column.empty() || data::IsColumnIndex(column)) return;
      bad->Add(field, field + " " + QuotedForError(column) +
                          " is a column name, and data.header \"none\" says the file has no "
                          "header line to find it in: give the column's 0-based index");
    };
    by_index("data.label_column", data.label_column());
    for (int i = 0; i < count && i < kMaxLabelColumns; ++i) {
      by_index("data.label_columns[" + std::to_string(i) + "]", data.label_columns(i));
    }
  }
  if (count > kMaxLabelColumns) {
    bad->Add("data.label_columns", "data.label_columns has " + std::to_string(count) +
                                       " columns; at most " + std::to_string(kMaxLabelColumns));
    return;
  }
  for (int i = 0; i < count; ++i) {
    const std::string field = "data.label_columns[" + std::to_string(i) + "]";
    const std::string& column = data.label_columns(i);
    if (column.empty()) {
      bad->Add(field, field + " is empty; name a column (or give its index)");
      continue;
    }
    CheckPrintable(bad, field, column, kMaxColumnNameBytes, "a column name");
    for (int j = 0; j < i; ++j) {
      if (data.label_columns(j) == column) {
        bad->Add(field, field + " repeats data.label_columns[" + std::to_string(j) +
                            "]: each target is one column");
        break;
      }
    }
  }
  if (count > 1 && !bad->Any("data.task") && data.task() != v1::DATA_TASK_REGRESSION) {
    bad->Add("data.label_columns",
             "data.label_columns names " + std::to_string(count) +
                 " columns: several label columns are the targets of data.task \"regression\", "
                 "and " +
                 Quoted(data.task()) + " takes one label (data.label_column)");
  }
  const int targets = std::max(count, 1);
  if (data.kind() == v1::DATA_KIND_CSV && data.task() == v1::DATA_TASK_REGRESSION &&
      !bad->Any("data.outputs") && data.outputs() != 0 && data.outputs() != targets) {
    bad->Add("data.outputs", "data.outputs " + Int(data.outputs()) + " is not the " +
                                 std::to_string(targets) + " target(s) of " +
                                 (count > 0 ? "data.label_columns" : "data.label_column") +
                                 " (one output per label column)");
  }
}

// data.array and data.labels_array: keys of .npz archives' arrays, names of
// safetensors files' tensors.
void CheckArrayNames(Violations* bad, const v1::DataSpec& data) {
  for (const auto& [field, key] : {std::pair{"data.array", &data.array()},
                                   std::pair{"data.labels_array", &data.labels_array()}}) {
    CheckPrintable(bad, field, *key, kMaxPathBytes, "an array's name");
    if (!key->empty() && !bad->Any("data.kind") && data.kind() != v1::DATA_KIND_NPY &&
        data.kind() != v1::DATA_KIND_SAFETENSORS) {
      bad->Add(field, std::string(field) +
                          " names an array of a .npz archive or a safetensors file: it applies "
                          "to data.kind \"npy\" and \"safetensors\" only, not " +
                          Quoted(data.kind()));
    }
  }
}

void CheckData(Violations* bad, const v1::DataSpec& data, const v1::ModelSpec& model) {
  const bool synthetic = data.kind() == v1::DATA_KIND_SYNTHETIC;
  const v1::DataTask task = data.task();
  CheckNamed(bad, "data.kind", data.kind());
  CheckNamed(bad, "data.task", task);
  CheckNamed(bad, "data.token_dtype", data.token_dtype());
  CheckNamed(bad, "data.token_layout", data.token_layout());
  if (data.header() != v1::CSV_HEADER_UNSPECIFIED) CheckNamed(bad, "data.header", data.header());
  if (synthetic && !bad->Any("data.samples") && data.samples() == 0) {
    bad->Add("data.samples", RequiredPositive("data.samples", " for synthetic data"));
  }
  const v1::DataTask model_task = TaskOf(model.kind());
  const bool mlp_task = task == v1::DATA_TASK_CLASSIFICATION || task == v1::DATA_TASK_REGRESSION;
  if (!bad->AnyOf("model.kind", "data.task") &&
      ((model_task != v1::DATA_TASK_UNSPECIFIED && task != model_task) ||
       (model.kind() == v1::MODEL_KIND_MLP && !mlp_task))) {
    bad->Add("data.task", "model.kind " + Quoted(model.kind()) + " cannot train on data.task " +
                              Quoted(task) + " (it takes " +
                              (model_task != v1::DATA_TASK_UNSPECIFIED
                                   ? Quoted(model_task)
                                   : "\"classification\" or \"regression\"") +
                              ")");
  }
  // Token files hold sequences of ids, and only they (or synthetic text)
  // hold sequences: CSV tables and arrays hold a sample's values.
  if (!bad->AnyOf("data.kind", "data.task") && data.kind() == v1::DATA_KIND_TOKENS &&
      task != v1::DATA_TASK_LANGUAGE_MODELING) {
    bad->Add("data.task",
             "data.kind \"tokens\" holds token sequences, for data.task "
             "\"language_modeling\" (got " +
                 Quoted(task) + ")");
  } else if (!bad->AnyOf("data.kind", "data.task") && task == v1::DATA_TASK_LANGUAGE_MODELING &&
             !synthetic && data.kind() != v1::DATA_KIND_TOKENS) {
    bad->Add("data.kind",
             "data.task \"language_modeling\" reads token sequences: data.kind "
             "\"tokens\" (got " +
                 Quoted(data.kind()) + ")");
  }
  // A loss takes its task's targets: cross-entropy class labels (token ids
  // for language modeling), squared error real values.
  const bool real_targets = task == v1::DATA_TASK_REGRESSION;
  if (!bad->AnyOf("model.loss", "data.task") && model.loss() == v1::LOSS_MSE && !real_targets) {
    bad->Add("model.loss",
             "model.loss \"mse\" needs the real-valued targets of data.task "
             "\"regression\"; data.task " +
                 Quoted(task) + " has class labels: leave model.loss out (cross_entropy)");
  }
  if (!bad->AnyOf("model.loss", "data.task") && model.loss() == v1::LOSS_CROSS_ENTROPY &&
      real_targets) {
    bad->Add("model.loss",
             "model.loss \"cross_entropy\" needs class labels; data.task \"regression\" has "
             "real-valued targets: leave model.loss out (mse), or make them classes with "
             "data.task \"classification\"");
  }
  if (!synthetic && !bad->Any("data.kind") && data.path().empty()) {
    bad->Add("data.path", "data.path is required for data.kind " + Quoted(data.kind()));
  }
  if ((data.kind() == v1::DATA_KIND_IDX || data.kind() == v1::DATA_KIND_NPY) &&
      data.labels_path().empty()) {
    bad->Add("data.labels_path",
             "data.labels_path is required for data.kind " + Quoted(data.kind()) +
                 (data.kind() == v1::DATA_KIND_NPY
                      ? " (or data.labels_array, for labels in data.path's .npz archive)"
                      : ""));
  }
  if (synthetic && mlp_task && !bad->Any("data.features") && data.features() == 0) {
    bad->Add("data.features", RequiredPositive("data.features", " for synthetic data"));
  }
  if (!bad->AnyOf("data.sequence_length", "data.min_sequence_length") &&
      data.min_sequence_length() > data.sequence_length()) {
    bad->Add("data.min_sequence_length",
             "data.min_sequence_length " + Int(data.min_sequence_length()) +
                 " exceeds data.sequence_length " + Int(data.sequence_length()));
  }
  if (IsClassification(task) && !bad->Any("data.outputs") && data.outputs() < 2 &&
      !(data.outputs() == 0 && !synthetic)) {
    bad->Add("data.outputs", "data.outputs " + Int(data.outputs()) +
                                 " must be at least 2 classes for classification");
  }
  if (!bad->Any("data.separator") && data.token_dtype() == v1::TOKEN_DTYPE_UINT8 &&
      data.separator() > 255) {
    bad->Add("data.separator", "data.separator " + Int(data.separator()) +
                                   " is not a uint8 token id (0 to 255; data.token_dtype "
                                   "\"uint16\" has 0 to 65535)");
  }
  if (!bad->Any("data.separator") && data.token_dtype() == v1::TOKEN_DTYPE_UINT16 &&
      data.separator() > 65535) {
    bad->Add("data.separator", "data.separator " + Int(data.separator()) +
                                   " is not a uint16 token id (0 to 65535; data.token_dtype "
                                   "\"uint32\" has 0 to 4294967295)");
  }
  CheckLabelColumns(bad, data);
  CheckArrayNames(bad, data);
}

void DefaultOptimizer(v1::OptimizerSpec* opt) {
  if (opt->kind() == v1::OPTIMIZER_KIND_UNSPECIFIED) opt->set_kind(v1::OPTIMIZER_KIND_SGD);
  if (opt->kind() == v1::OPTIMIZER_KIND_ADAMW) {
    if (opt->beta1() == 0) opt->set_beta1(0.9);
    if (opt->beta2() == 0) opt->set_beta2(0.999);
    if (opt->eps() == 0) opt->set_eps(1e-8);
  }
}

void CheckOptimizer(Violations* bad, const v1::OptimizerSpec& opt) {
  CheckNamed(bad, "optimizer.kind", opt.kind());
  if (opt.nesterov() && opt.momentum() == 0) {
    bad->Add("optimizer.nesterov", "optimizer.nesterov needs optimizer.momentum > 0");
  }
  if (!bad->Any("optimizer.kind") && opt.kind() != v1::OPTIMIZER_KIND_SGD &&
      (opt.momentum() != 0 || opt.nesterov())) {
    bad->Add("optimizer.momentum",
             "optimizer.momentum and optimizer.nesterov apply to \"sgd\" only, not " +
                 Quoted(opt.kind()));
  }
}

// A label key as Kubernetes has them: an optional DNS-style prefix and "/",
// then a name of letters, digits, '-', '_' and '.' that begins and ends with
// a letter or digit.
bool IsLabelKey(std::string_view key) {
  const size_t slash = key.rfind('/');
  const std::string_view prefix = slash == std::string_view::npos ? "" : key.substr(0, slash);
  const std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (slash != std::string_view::npos && (prefix.empty() || prefix.size() > kMaxLabelPrefixBytes)) {
    return false;
  }
  for (char c : prefix) {
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.')) {
      return false;
    }
  }
  if (name.empty() || name.size() > kMaxLabelNameBytes || !alnum(name.front()) ||
      !alnum(name.back())) {
    return false;
  }
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

void CheckLabels(Violations* bad, const v1::JobSpec& spec) {
  if (spec.labels_size() > kMaxLabels) {
    bad->Add("labels", "labels has " + std::to_string(spec.labels_size()) + " entries; at most " +
                           std::to_string(kMaxLabels));
    return;
  }
  // In key order, so that the violations come in the same order each time.
  std::vector<std::pair<std::string, std::string>> labels(spec.labels().begin(),
                                                          spec.labels().end());
  std::sort(labels.begin(), labels.end());
  for (const auto& [key, value] : labels) {
    if (!IsLabelKey(key)) {
      bad->Add("labels", "labels: key " + QuotedForError(key) +
                             " is not a label key (1 to 63 letters, digits, '-', '_' or '.', "
                             "beginning and ending with a letter or digit, after an optional "
                             "\"prefix/\")");
      continue;
    }
    CheckPrintable(bad, "labels." + key, value, kMaxLabelValueBytes, "a label value");
  }
}

void CheckPaths(Violations* bad, const v1::JobSpec& spec) {
  const std::pair<const char*, const std::string*> paths[] = {
      {"model.path", &spec.model().path()},
      {"data.path", &spec.data().path()},
      {"data.labels_path", &spec.data().labels_path()},
      {"output", &spec.output()},
      {"checkpoint.dir", &spec.checkpoint().dir()},
  };
  for (const auto& [field, path] : paths) {
    CheckPrintable(bad, field, *path, kMaxPathBytes, "a path");
  }
}

// The checks that combine fields of the whole spec, each skipped where one
// of its fields is wrong already.
// adaptive_batch, once the batch plan is known: its bounds hold a global
// batch the fixed micro_batch × devices can make, including the one the job
// starts with.
void CheckAdaptiveBatch(Violations* bad, const v1::BatchPlan& plan, const v1::AdaptiveBatch& a) {
  const int64_t unit = plan.micro_batch() * plan.devices();
  if (unit <= 0 || a.max_global_batch() / unit <
                       std::max<int64_t>(1, (a.min_global_batch() + unit - 1) / unit)) {
    bad->Add("adaptive_batch", "adaptive_batch [" + Int(a.min_global_batch()) + ", " +
                                   Int(a.max_global_batch()) +
                                   "] holds no multiple of micro_batch × devices " + Int(unit));
  } else if (plan.global_batch() < a.min_global_batch() ||
             plan.global_batch() > a.max_global_batch()) {
    bad->Add("adaptive_batch", "the starting global_batch " + Int(plan.global_batch()) +
                                   " lies outside adaptive_batch [" + Int(a.min_global_batch()) +
                                   ", " + Int(a.max_global_batch()) + "]");
  } else if (plan.devices() == 1 && a.min_global_batch() < 2 * plan.micro_batch()) {
    bad->Add("adaptive_batch.min_global_batch",
             "adaptive_batch.min_global_batch " + Int(a.min_global_batch()) +
                 " on one device must be at least 2 × micro_batch (" + Int(2 * plan.micro_batch()) +
                 "): the noise scale it follows needs two micro-batches per window");
  }
}

void CheckCombinations(Violations* bad, const v1::JobSpec& spec) {
  const v1::AdaptiveBatch& adaptive = spec.adaptive_batch();
  if (!bad->Any("adaptive_batch") &&
      (adaptive.min_global_batch() > 0 || adaptive.max_global_batch() > 0 ||
       adaptive.interval_steps() > 0)) {
    if (adaptive.min_global_batch() == 0 || adaptive.max_global_batch() == 0) {
      bad->Add("adaptive_batch",
               "adaptive_batch needs min_global_batch and max_global_batch (got " +
                   Int(adaptive.min_global_batch()) + " and " + Int(adaptive.max_global_batch()) +
                   ")");
    } else if (adaptive.min_global_batch() > adaptive.max_global_batch()) {
      bad->Add("adaptive_batch.min_global_batch",
               "adaptive_batch.min_global_batch " + Int(adaptive.min_global_batch()) +
                   " is above max_global_batch " + Int(adaptive.max_global_batch()));
    } else if (spec.nominal_batch() > 0 || spec.auto_micro_batch() || spec.min_devices() > 0) {
      bad->Add(
          "adaptive_batch",
          "adaptive_batch moves accumulation_steps at a fixed micro_batch and device count: it "
          "does not combine with nominal_batch, micro_batch auto or devices {min, max}");
    }
  }

  if (!bad->AnyOf("devices", "devices.min") && spec.min_devices() > spec.devices()) {
    bad->Add("devices.min", "devices.min " + Int(spec.min_devices()) +
                                " must be between 1 and devices.max " + Int(spec.devices()));
  }
  if (spec.min_devices() > 0 && spec.nominal_batch() > 0) {
    bad->Add("nominal_batch",
             "devices {min, max} and nominal_batch do not combine: the nominal ramp is planned "
             "for one device count");
  }
  if (spec.precision() == v1::PRECISION_FP16 && spec.loss_scaling() != v1::LOSS_SCALING_DYNAMIC &&
      !bad->Any("loss_scaling")) {
    bad->Add("loss_scaling", "precision \"fp16\" needs loss_scaling \"dynamic\" (got " +
                                 Quoted(spec.loss_scaling()) + ")");
  }
  if (spec.checkpoint().dir().empty() &&
      (spec.checkpoint().every_steps() != 0 || spec.checkpoint().keep() != 0)) {
    bad->Add("checkpoint.dir", "checkpoint.every_steps " + Int(spec.checkpoint().every_steps()) +
                                   " needs checkpoint.dir (where to write them)");
  }
  if ((spec.lr_scaling() == v1::LR_SCALING_LINEAR || spec.lr_scaling() == v1::LR_SCALING_SQRT) &&
      spec.base_batch() == 0) {
    bad->Add("base_batch", "lr_scaling " + Quoted(spec.lr_scaling()) +
                               " needs base_batch (the batch lr was tuned for)");
  }
  if (spec.nominal_batch() > 0 &&
      (spec.micro_batch() == 0 || spec.accumulation_steps() != 0 || spec.global_batch() != 0)) {
    bad->Add("nominal_batch",
             "nominal_batch " + Int(spec.nominal_batch()) +
                 " derives accumulation_steps and global_batch from micro_batch: give micro_batch "
                 "only (got micro_batch " +
                 Int(spec.micro_batch()) + ", accumulation_steps " +
                 Int(spec.accumulation_steps()) + ", global_batch " + Int(spec.global_batch()) +
                 ")");
  }
  if (spec.auto_micro_batch() && (spec.global_batch() == 0 || spec.micro_batch() != 0 ||
                                  spec.accumulation_steps() != 0 || spec.nominal_batch() != 0)) {
    bad->Add("micro_batch",
             "micro_batch auto needs global_batch and derives micro_batch and accumulation_steps "
             "(got global_batch " +
                 Int(spec.global_batch()) + ", accumulation_steps " +
                 Int(spec.accumulation_steps()) + ")");
  }
  if (!bad->AnyOf("max_steps", "epochs") && spec.max_steps() == 0 && spec.epochs() == 0) {
    bad->Add("max_steps", "set max_steps or epochs (both are 0): the job would never end");
  }
}

}  // namespace

const std::vector<NumericLimit>& NumericLimits() {
  static const std::vector<NumericLimit> limits = [] {
    std::vector<NumericLimit> out;
    for (const LimitedField& f : LimitedFields()) out.push_back(f.limit);
    return out;
  }();
  return limits;
}

StatusOr<v1::JobSpec> NormalizeJobSpec(const v1::JobSpec& input) {
  Violations bad;
  if (input.ByteSizeLong() > kMaxSpecBytes) {
    // Not even read further: a spec this size is a mistake or an attack.
    bad.Add("spec", "the spec has " + std::to_string(input.ByteSizeLong()) +
                        " bytes serialized; at most " + std::to_string(kMaxSpecBytes));
    return Status::InvalidFields(bad.Take());
  }
  v1::JobSpec spec = input;
  if (spec.devices() == 0) spec.set_devices(1);
  if (spec.normalization() == v1::NORMALIZATION_UNSPECIFIED) {
    spec.set_normalization(v1::NORMALIZATION_EXACT);
  }
  if (spec.partial_window() == v1::PARTIAL_WINDOW_UNSPECIFIED) {
    spec.set_partial_window(v1::PARTIAL_WINDOW_NORMALIZE);
  }
  if (spec.lr_schedule().kind() == v1::LR_SCHEDULE_KIND_UNSPECIFIED) {
    spec.mutable_lr_schedule()->set_kind(v1::LR_SCHEDULE_KIND_CONSTANT);
  }
  if (spec.lr_scaling() == v1::LR_SCALING_UNSPECIFIED) spec.set_lr_scaling(v1::LR_SCALING_NONE);
  if (spec.precision() == v1::PRECISION_UNSPECIFIED) spec.set_precision(v1::PRECISION_FP32);
  if (spec.loss_scaling() == v1::LOSS_SCALING_UNSPECIFIED) {
    spec.set_loss_scaling(spec.precision() == v1::PRECISION_FP16 ? v1::LOSS_SCALING_DYNAMIC
                                                                 : v1::LOSS_SCALING_NONE);
  }
  if (spec.cuda_graphs() == v1::CUDA_GRAPHS_UNSPECIFIED) spec.set_cuda_graphs(v1::CUDA_GRAPHS_OFF);
  DefaultModel(spec.mutable_model());
  DefaultData(spec.mutable_data(), spec.model(), spec.seed());
  DefaultOptimizer(spec.mutable_optimizer());

  CheckPrintable(&bad, "name", spec.name(), kMaxJobNameBytes, "a job name");
  for (const LimitedField& f : LimitedFields()) CheckLimit(&bad, f, spec);
  CheckModel(&bad, spec.model());
  CheckData(&bad, spec.data(), spec.model());
  CheckOptimizer(&bad, spec.optimizer());
  CheckNamed(&bad, "normalization", spec.normalization());
  CheckNamed(&bad, "partial_window", spec.partial_window());
  CheckNamed(&bad, "lr_schedule.kind", spec.lr_schedule().kind());
  CheckNamed(&bad, "lr_scaling", spec.lr_scaling());
  CheckNamed(&bad, "precision", spec.precision());
  CheckNamed(&bad, "loss_scaling", spec.loss_scaling());
  CheckNamed(&bad, "cuda_graphs", spec.cuda_graphs());
  CheckPaths(&bad, spec);
  CheckLabels(&bad, spec);
  CheckCombinations(&bad, spec);
  // The batch arithmetic, once its numbers are each in range.
  if (!bad.AnyOf("micro_batch", "accumulation_steps", "global_batch", "devices", "devices.min",
                 "nominal_batch")) {
    StatusOr<v1::BatchPlan> batch = ResolveBatchPlan(spec);
    if (!batch.ok()) {
      bad.Add("global_batch", batch.status().message());
    } else if (batch->global_batch() > kKi * kMi) {
      bad.Add("global_batch", "global_batch " + Int(batch->global_batch()) +
                                  " (micro_batch × accumulation_steps × devices) exceeds the "
                                  "limit " +
                                  Int(static_cast<int64_t>(kKi * kMi)));
    } else {
      if (spec.adaptive_batch().max_global_batch() > 0 && !bad.Any("adaptive_batch")) {
        CheckAdaptiveBatch(&bad, *batch, spec.adaptive_batch());
      }
      if (spec.partial_window() == v1::PARTIAL_WINDOW_DROP &&
          spec.data().kind() == v1::DATA_KIND_SYNTHETIC && !bad.Any("data.samples") &&
          batch->global_batch() > spec.data().samples()) {
        bad.Add("partial_window", "partial_window \"drop\" with global_batch " +
                                      Int(batch->global_batch()) + " larger than data.samples " +
                                      Int(spec.data().samples()) +
                                      ": every window would be dropped");
      }
    }
  }
  if (!bad.empty()) return Status::InvalidFields(bad.Take());
  return spec;
}

StatusOr<v1::BatchPlan> ResolveBatchPlan(const v1::JobSpec& spec) {
  BatchRequest request;
  request.global_batch = spec.global_batch();
  request.micro_batch = spec.micro_batch();
  request.accumulation_steps = spec.accumulation_steps();
  request.devices = spec.devices();
  if (spec.auto_micro_batch() && spec.global_batch() > 0) {
    // Decided by the trainer; the global batch is what the plan fixes.
    const int64_t devices = spec.devices() == 0 ? 1 : spec.devices();
    if (spec.global_batch() % devices != 0) {
      return Status::InvalidArgument("global_batch " + std::to_string(spec.global_batch()) +
                                     " is not divisible by devices " + std::to_string(devices));
    }
    v1::BatchPlan plan;
    plan.set_devices(static_cast<int32_t>(devices));
    plan.set_global_batch(spec.global_batch());
    return plan;
  }
  if (spec.nominal_batch() > 0 && spec.micro_batch() > 0) {
    // The plan states the accumulation after the ramp.
    request.accumulation_steps = NominalAccumulation(
        spec.nominal_batch(), spec.micro_batch(), spec.devices() == 0 ? 1 : spec.devices(), 0, 0);
  }
  StatusOr<BatchSizes> sizes = ResolveBatch(request);
  if (!sizes.ok()) return sizes.status();
  if (spec.min_devices() > 0 && sizes->global_batch % spec.min_devices() != 0) {
    return Status::InvalidArgument("global_batch " + std::to_string(sizes->global_batch) +
                                   " does not split over devices.min " +
                                   std::to_string(spec.min_devices()));
  }
  v1::BatchPlan plan;
  plan.set_micro_batch(sizes->micro_batch);
  plan.set_accumulation_steps(sizes->accumulation_steps);
  plan.set_devices(static_cast<int32_t>(sizes->devices));
  plan.set_global_batch(sizes->global_batch);
  return plan;
}

StatusOr<v1::BatchPlan> PlanForDevices(const v1::JobSpec& spec, const v1::BatchPlan& plan,
                                       int32_t devices) {
  if (devices <= 0 || plan.global_batch() % devices != 0) {
    return Status::InvalidArgument("global_batch " + std::to_string(plan.global_batch()) +
                                   " does not split over " + std::to_string(devices) + " devices");
  }
  v1::BatchPlan out = plan;
  out.set_devices(devices);
  if (spec.auto_micro_batch()) {  // decided by the trainer, for this count
    out.set_micro_batch(0);
    out.set_accumulation_steps(0);
    return out;
  }
  const int64_t per_rank = plan.global_batch() / devices;
  const int64_t wanted = spec.micro_batch() > 0 ? spec.micro_batch() : plan.micro_batch();
  out.set_micro_batch(LargestDivisorAtMost(per_rank, wanted));
  out.set_accumulation_steps(per_rank / out.micro_batch());
  return out;
}

WindowScheduleConfig ScheduleOf(const v1::JobSpec& spec, const v1::BatchPlan& batch) {
  WindowScheduleConfig config;
  config.samples_per_epoch = spec.data().samples();
  // micro_batch: auto leaves the split open; the windows depend only on the
  // global batch.
  const bool open_split = batch.micro_batch() == 0;
  config.micro_batch = open_split ? batch.global_batch() / batch.devices() : batch.micro_batch();
  config.devices = batch.devices();
  config.accumulation_steps = open_split ? 1 : batch.accumulation_steps();
  config.nominal_batch = spec.nominal_batch();
  config.warmup_steps = spec.lr_schedule().warmup_steps();
  config.policy = spec.partial_window() == v1::PARTIAL_WINDOW_DROP    ? PartialWindow::kDrop
                  : spec.partial_window() == v1::PARTIAL_WINDOW_CARRY ? PartialWindow::kCarry
                                                                      : PartialWindow::kNormalize;
  config.epochs = spec.epochs();
  config.max_steps = spec.max_steps();
  return config;
}

int64_t TotalSteps(const v1::JobSpec& spec, const v1::BatchPlan& batch) {
  // File data sets: unknown until the trainer has read them.
  if (spec.data().samples() <= 0) return 0;
  return WindowSchedule(ScheduleOf(spec, batch)).steps_total();
}

}  // namespace accumulus
