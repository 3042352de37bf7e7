#include "common/job_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <sstream>
#include <string>

#include "common/batch_arithmetic.h"
#include "common/utf8.h"
#include "common/window_schedule.h"

namespace accumulus {
namespace {

template <typename T>
std::string Describe(const std::string& field, const T& value) {
  std::ostringstream out;
  out << field << " " << value;
  return out.str();
}

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

Status OneOf(const std::string& field, const std::string& value,
             std::initializer_list<const char*> allowed) {
  for (const char* a : allowed) {
    if (value == a) return Status::Ok();
  }
  std::string list;
  for (const char* a : allowed) list += (list.empty() ? "" : ", ") + Quoted(a);
  return Status::InvalidArgument(field + " " + Quoted(value) + " is not one of " + list);
}

Status Positive(const std::string& field, double value) {
  if (!(value > 0) || !std::isfinite(value)) {
    return Status::InvalidArgument(Describe(field, value) + " must be a positive number");
  }
  return Status::Ok();
}

Status NotNegative(const std::string& field, double value) {
  if (!(value >= 0) || !std::isfinite(value)) {
    return Status::InvalidArgument(Describe(field, value) + " must be zero or positive");
  }
  return Status::Ok();
}

Status InUnitInterval(const std::string& field, double value) {
  if (!(value >= 0 && value < 1)) {
    return Status::InvalidArgument(Describe(field, value) + " must be in [0, 1)");
  }
  return Status::Ok();
}

// A job's name is shown in every list and log: printable UTF-8, bounded.
// The error gives the position and code point of a bad character, never the
// character itself (it may be an escape sequence).
Status CheckName(const std::string& name) {
  if (name.size() > kMaxJobNameBytes) {
    return Status::InvalidArgument("name has " + std::to_string(name.size()) + " bytes; at most " +
                                   std::to_string(kMaxJobNameBytes));
  }
  size_t character = 0;
  for (size_t i = 0; i < name.size(); ++character) {
    uint32_t code_point = 0;
    const size_t length = DecodeUtf8(name, i, &code_point);
    if (length == 0) {
      return Status::InvalidArgument("name: byte " + std::to_string(i + 1) + " is not UTF-8");
    }
    if (IsControlCodePoint(code_point)) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "U+%04X", code_point);
      return Status::InvalidArgument("name: character " + std::to_string(character + 1) + " (" +
                                     hex +
                                     ") is a control character; a job name is printable "
                                     "text");
    }
    i += length;
  }
  return Status::Ok();
}

Status FirstError(std::initializer_list<Status> checks) {
  for (const Status& s : checks) {
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status CheckModel(v1::ModelSpec* model) {
  if (model->kind().empty()) {
    return Status::InvalidArgument("model.kind is required (\"mlp\", \"cnn\" or \"charlm\")");
  }
  if (Status s = OneOf("model.kind", model->kind(), {"mlp", "cnn", "charlm", "torchscript"});
      !s.ok()) {
    return s;
  }
  if (model->kind() == "torchscript" && model->path().empty()) {
    return Status::InvalidArgument("model.path is required for model.kind \"torchscript\"");
  }
  if (model->kind() == "torchscript" && model->activation_checkpointing()) {
    return Status::InvalidArgument(
        "model.activation_checkpointing is for the built-in models; a TorchScript module "
        "checkpoints inside its own forward (torch.utils.checkpoint before export)");
  }
  if (!model->loss().empty()) {
    if (Status s = OneOf("model.loss", model->loss(), {"cross_entropy", "mse"}); !s.ok()) return s;
  }
  if (model->norm().empty()) model->set_norm("batch");
  if (model->d_model() == 0) model->set_d_model(128);
  if (model->heads() == 0) model->set_heads(4);
  if (model->layers() == 0) model->set_layers(2);
  Status s = FirstError({
      OneOf("model.norm", model->norm(), {"batch", "none"}),
      Positive("model.d_model", static_cast<double>(model->d_model())),
      Positive("model.heads", static_cast<double>(model->heads())),
      Positive("model.layers", static_cast<double>(model->layers())),
  });
  if (!s.ok()) return s;
  if (model->d_model() % model->heads() != 0) {
    return Status::InvalidArgument("model.d_model " + std::to_string(model->d_model()) +
                                   " is not divisible by model.heads " +
                                   std::to_string(model->heads()));
  }
  for (int i = 0; i < model->hidden_size(); ++i) {
    if (model->hidden(i) <= 0) {
      return Status::InvalidArgument(
          Describe("model.hidden[" + std::to_string(i) + "]", model->hidden(i)) +
          " must be positive");
    }
  }
  return Status::Ok();
}

// The data task each model kind trains on.
const char* TaskOf(const std::string& model) {
  if (model == "cnn") return "image_classification";
  if (model == "charlm") return "language_modeling";
  return nullptr;  // mlp: classification or regression; torchscript: any
}

Status CheckData(v1::DataSpec* data, const v1::ModelSpec& model, uint64_t job_seed) {
  if (data->kind().empty()) data->set_kind("synthetic");
  const bool synthetic = data->kind() == "synthetic";
  if (data->token_dtype().empty()) data->set_token_dtype("uint8");
  if (data->token_layout().empty()) data->set_token_layout("documents");
  if (data->kind() == "tokens" && data->task().empty()) data->set_task("language_modeling");
  if (data->task().empty()) {
    data->set_task(TaskOf(model.kind()) ? TaskOf(model.kind()) : "classification");
  }
  const std::string& task = data->task();
  const bool classification = task == "classification" || task == "image_classification";
  if (data->outputs() == 0) data->set_outputs(classification ? 10 : 1);
  if (data->channels() == 0) data->set_channels(3);
  if (data->image_size() == 0) data->set_image_size(32);
  if (data->sequence_length() == 0) data->set_sequence_length(64);
  if (data->min_sequence_length() == 0) {
    data->set_min_sequence_length(std::min<int64_t>(8, data->sequence_length()));
  }
  // A data seed distinct from the init seed, yet fixed by the job seed.
  if (data->seed() == 0) data->set_seed(job_seed ^ 0x9E3779B97F4A7C15ULL);
  Status s = FirstError({
      OneOf("data.kind", data->kind(), {"synthetic", "csv", "idx", "tokens"}),
      OneOf("data.task", task,
            {"classification", "regression", "image_classification", "language_modeling"}),
      synthetic ? Positive("data.samples", static_cast<double>(data->samples())) : Status::Ok(),
      OneOf("data.token_dtype", data->token_dtype(), {"uint8", "uint16"}),
      OneOf("data.token_layout", data->token_layout(), {"documents", "blocks"}),
      NotNegative("data.noise", data->noise()),
      Positive("data.channels", static_cast<double>(data->channels())),
      Positive("data.image_size", static_cast<double>(data->image_size())),
      Positive("data.sequence_length", static_cast<double>(data->sequence_length())),
      Positive("data.min_sequence_length", static_cast<double>(data->min_sequence_length())),
  });
  if (!s.ok()) return s;
  const char* model_task = TaskOf(model.kind());
  if ((model_task != nullptr && task != model_task) ||
      (model.kind() == "mlp" && task != "classification" && task != "regression")) {
    return Status::InvalidArgument("model.kind \"" + model.kind() +
                                   "\" cannot train on data.task \"" + task + "\" (it takes " +
                                   (model_task ? std::string("\"") + model_task + "\""
                                               : "\"classification\" or \"regression\"") +
                                   ")");
  }
  if (!synthetic && data->path().empty()) {
    return Status::InvalidArgument("data.path is required for data.kind \"" + data->kind() + "\"");
  }
  if (data->kind() == "idx" && data->labels_path().empty()) {
    return Status::InvalidArgument("data.labels_path is required for data.kind \"idx\"");
  }
  if (synthetic && (task == "classification" || task == "regression") && data->features() <= 0) {
    return Status::InvalidArgument("data.features " + std::to_string(data->features()) +
                                   " must be a positive number");
  }
  if (data->min_sequence_length() > data->sequence_length()) {
    return Status::InvalidArgument(
        "data.min_sequence_length " + std::to_string(data->min_sequence_length()) +
        " exceeds data.sequence_length " + std::to_string(data->sequence_length()));
  }
  if (classification && data->outputs() < 2) {
    return Status::InvalidArgument(Describe("data.outputs", data->outputs()) +
                                   " must be at least 2 classes for classification");
  }
  if (data->outputs() < 0) {
    return Status::InvalidArgument(Describe("data.outputs", data->outputs()) + " must be positive");
  }
  return Status::Ok();
}

Status CheckOptimizer(v1::OptimizerSpec* opt) {
  if (opt->kind().empty()) opt->set_kind("sgd");
  if (opt->kind() == "adamw") {
    if (opt->beta1() == 0) opt->set_beta1(0.9);
    if (opt->beta2() == 0) opt->set_beta2(0.999);
    if (opt->eps() == 0) opt->set_eps(1e-8);
  }
  Status s = FirstError({
      OneOf("optimizer.kind", opt->kind(), {"sgd", "adamw"}),
      Positive("optimizer.lr", opt->lr()),
      InUnitInterval("optimizer.momentum", opt->momentum()),
      NotNegative("optimizer.weight_decay", opt->weight_decay()),
      InUnitInterval("optimizer.beta1", opt->beta1()),
      InUnitInterval("optimizer.beta2", opt->beta2()),
      NotNegative("optimizer.eps", opt->eps()),
  });
  if (!s.ok()) return s;
  if (opt->nesterov() && opt->momentum() == 0) {
    return Status::InvalidArgument("optimizer.nesterov needs optimizer.momentum > 0");
  }
  if (opt->kind() != "sgd" && (opt->momentum() != 0 || opt->nesterov())) {
    return Status::InvalidArgument(
        "optimizer.momentum and optimizer.nesterov apply to \"sgd\" only, not " +
        Quoted(opt->kind()));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<v1::JobSpec> NormalizeJobSpec(const v1::JobSpec& input) {
  v1::JobSpec spec = input;
  if (spec.devices() == 0) spec.set_devices(1);
  if (spec.normalization().empty()) spec.set_normalization("exact");
  if (spec.partial_window().empty()) spec.set_partial_window("normalize");
  if (spec.lr_schedule().kind().empty()) spec.mutable_lr_schedule()->set_kind("constant");
  if (spec.lr_scaling().empty()) spec.set_lr_scaling("none");
  if (spec.precision().empty()) spec.set_precision("fp32");
  if (spec.loss_scaling().empty()) {
    spec.set_loss_scaling(spec.precision() == "fp16" ? "dynamic" : "none");
  }
  Status s = FirstError({
      CheckName(spec.name()),
      CheckModel(spec.mutable_model()),
      CheckData(spec.mutable_data(), spec.model(), spec.seed()),
      CheckOptimizer(spec.mutable_optimizer()),
      OneOf("normalization", spec.normalization(), {"exact", "per_microbatch_mean"}),
      NotNegative("max_grad_norm", spec.max_grad_norm()),
      NotNegative("max_steps", static_cast<double>(spec.max_steps())),
      NotNegative("epochs", static_cast<double>(spec.epochs())),
      NotNegative("threads.intra_op", spec.threads().intra_op()),
      NotNegative("threads.blas", spec.threads().blas()),
      NotNegative("collective_timeout_seconds", spec.collective_timeout_seconds()),
      NotNegative("bucket_megabytes", spec.bucket_megabytes()),
      NotNegative("checkpoint.every_steps", static_cast<double>(spec.checkpoint().every_steps())),
      NotNegative("checkpoint.keep", static_cast<double>(spec.checkpoint().keep())),
      NotNegative("max_restarts", spec.max_restarts()),
      OneOf("partial_window", spec.partial_window(), {"normalize", "drop", "carry"}),
      OneOf("lr_schedule.kind", spec.lr_schedule().kind(), {"constant", "cosine", "linear"}),
      NotNegative("lr_schedule.warmup_steps",
                  static_cast<double>(spec.lr_schedule().warmup_steps())),
      InUnitInterval("lr_schedule.min_lr_ratio", spec.lr_schedule().min_lr_ratio()),
      OneOf("lr_scaling", spec.lr_scaling(), {"none", "linear"}),
      NotNegative("base_batch", static_cast<double>(spec.base_batch())),
      NotNegative("nominal_batch", static_cast<double>(spec.nominal_batch())),
      OneOf("precision", spec.precision(), {"fp32", "bf16", "fp16"}),
      OneOf("loss_scaling", spec.loss_scaling(), {"none", "dynamic"}),
      NotNegative("initial_loss_scale", spec.initial_loss_scale()),
      NotNegative("loss_scale_growth_interval", spec.loss_scale_growth_interval()),
  });
  if (!s.ok()) return s;
  if (spec.devices() < 0) {
    return Status::InvalidArgument(Describe("devices", spec.devices()) + " must be positive");
  }
  if (spec.min_devices() < 0 || spec.min_devices() > spec.devices()) {
    return Status::InvalidArgument("devices.min " + std::to_string(spec.min_devices()) +
                                   " must be between 1 and devices.max " +
                                   std::to_string(spec.devices()));
  }
  if (spec.min_devices() > 0 && spec.nominal_batch() > 0) {
    return Status::InvalidArgument(
        "devices {min, max} and nominal_batch do not combine: the nominal ramp is planned for "
        "one device count");
  }
  if (spec.precision() == "fp16" && spec.loss_scaling() != "dynamic") {
    return Status::InvalidArgument("precision \"fp16\" needs loss_scaling \"dynamic\" (got \"" +
                                   spec.loss_scaling() + "\")");
  }
  if (spec.checkpoint().dir().empty() &&
      (spec.checkpoint().every_steps() != 0 || spec.checkpoint().keep() != 0)) {
    return Status::InvalidArgument("checkpoint.every_steps " +
                                   std::to_string(spec.checkpoint().every_steps()) +
                                   " needs checkpoint.dir (where to write them)");
  }
  if (spec.lr_scaling() == "linear" && spec.base_batch() == 0) {
    return Status::InvalidArgument(
        "lr_scaling \"linear\" needs base_batch (the batch lr was tuned for)");
  }
  if (spec.nominal_batch() > 0 &&
      (spec.micro_batch() == 0 || spec.accumulation_steps() != 0 || spec.global_batch() != 0)) {
    return Status::InvalidArgument(
        "nominal_batch " + std::to_string(spec.nominal_batch()) +
        " derives accumulation_steps and global_batch from micro_batch: give micro_batch only (got "
        "micro_batch " +
        std::to_string(spec.micro_batch()) + ", accumulation_steps " +
        std::to_string(spec.accumulation_steps()) + ", global_batch " +
        std::to_string(spec.global_batch()) + ")");
  }
  if (spec.auto_micro_batch() && (spec.global_batch() == 0 || spec.micro_batch() != 0 ||
                                  spec.accumulation_steps() != 0 || spec.nominal_batch() != 0)) {
    return Status::InvalidArgument(
        "micro_batch auto needs global_batch and derives micro_batch and accumulation_steps "
        "(got global_batch " +
        std::to_string(spec.global_batch()) + ", accumulation_steps " +
        std::to_string(spec.accumulation_steps()) + ")");
  }
  if (spec.memory_limit_bytes() < 0) {
    return Status::InvalidArgument("memory_limit_bytes " +
                                   std::to_string(spec.memory_limit_bytes()) +
                                   " must not be negative");
  }
  if (spec.max_steps() == 0 && spec.epochs() == 0) {
    return Status::InvalidArgument("set max_steps or epochs (both are 0): the job would never end");
  }
  if (StatusOr<v1::BatchPlan> batch = ResolveBatchPlan(spec); !batch.ok()) return batch.status();
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
  config.policy = spec.partial_window() == "drop"    ? PartialWindow::kDrop
                  : spec.partial_window() == "carry" ? PartialWindow::kCarry
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
