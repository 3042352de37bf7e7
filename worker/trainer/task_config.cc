#include "worker/trainer/task_config.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>

#include "common/enum_names.h"
#include "common/job_spec.h"

namespace accumulus::trainer {
namespace {

// Maps the normalized spec's closed sets onto the engine's own enums. A
// value outside a table (one NormalizeJobSpec never leaves, such as
// UNSPECIFIED, or one added to the .proto and not to the engine) is an
// error that names the field; the first one is kept.
class EnumMapping {
 public:
  template <typename Proto, typename Engine>
  void Map(const char* field, Proto value, std::initializer_list<std::pair<Proto, Engine>> table,
           Engine* out) {
    for (const auto& [from, to] : table) {
      if (from == value) {
        *out = to;
        return;
      }
    }
    if (status_.ok()) {
      status_ = Status::InvalidArgument(std::string(field) + ": \"" + NameOf(value) +
                                        "\" is not a value this trainer runs");
    }
  }
  const Status& status() const { return status_; }

 private:
  Status status_ = Status::Ok();
};

}  // namespace

StatusOr<engine::TrainConfig> ToTrainConfig(const v1::TrainerTask& task) {
  StatusOr<v1::JobSpec> normalized = NormalizeJobSpec(task.spec());
  if (!normalized.ok()) return normalized.status();
  StatusOr<v1::BatchPlan> batch = ResolveBatchPlan(*normalized);
  if (!batch.ok()) return batch.status();
  // An elastic job runs on the devices it was given: the same plan the
  // controller made for that count.
  if (normalized->min_devices() > 0 && task.world_size() > 0) {
    batch = PlanForDevices(*normalized, *batch, task.world_size());
    if (!batch.ok()) return batch.status();
  }
  const v1::JobSpec& spec = *normalized;

  engine::TrainConfig c;
  EnumMapping enums;
  enums.Map<v1::ModelKind, engine::ModelKind>(
      "model.kind", spec.model().kind(),
      {{v1::MODEL_KIND_MLP, engine::ModelKind::kMlp},
       {v1::MODEL_KIND_CNN, engine::ModelKind::kCnn},
       {v1::MODEL_KIND_CHARLM, engine::ModelKind::kCharLm},
       {v1::MODEL_KIND_TORCHSCRIPT, engine::ModelKind::kTorchScript}},
      &c.model.kind);
  enums.Map<v1::NormLayer, bool>("model.norm", spec.model().norm(),
                                 {{v1::NORM_LAYER_BATCH, true}, {v1::NORM_LAYER_NONE, false}},
                                 &c.model.batch_norm);
  enums.Map<v1::Loss, engine::LossChoice>(
      "model.loss", spec.model().loss(),
      {{v1::LOSS_UNSPECIFIED, engine::LossChoice::kByTask},
       {v1::LOSS_CROSS_ENTROPY, engine::LossChoice::kCrossEntropy},
       {v1::LOSS_MSE, engine::LossChoice::kMeanSquaredError}},
      &c.model.loss);
  enums.Map<v1::DataKind, engine::DataKind>(
      "data.kind", spec.data().kind(),
      {{v1::DATA_KIND_SYNTHETIC, engine::DataKind::kSynthetic},
       {v1::DATA_KIND_CSV, engine::DataKind::kCsv},
       {v1::DATA_KIND_IDX, engine::DataKind::kIdx},
       {v1::DATA_KIND_NPY, engine::DataKind::kNpy},
       {v1::DATA_KIND_TOKENS, engine::DataKind::kTokens},
       {v1::DATA_KIND_SAFETENSORS, engine::DataKind::kSafetensors}},
      &c.data.kind);
  enums.Map<v1::DataTask, engine::DataTask>(
      "data.task", spec.data().task(),
      {{v1::DATA_TASK_CLASSIFICATION, engine::DataTask::kClassification},
       {v1::DATA_TASK_REGRESSION, engine::DataTask::kRegression},
       {v1::DATA_TASK_IMAGE_CLASSIFICATION, engine::DataTask::kImageClassification},
       {v1::DATA_TASK_LANGUAGE_MODELING, engine::DataTask::kLanguageModeling}},
      &c.data.task);
  enums.Map<v1::TokenDtype, engine::TokenDtype>(
      "data.token_dtype", spec.data().token_dtype(),
      {{v1::TOKEN_DTYPE_UINT8, engine::TokenDtype::kUint8},
       {v1::TOKEN_DTYPE_UINT16, engine::TokenDtype::kUint16},
       {v1::TOKEN_DTYPE_UINT32, engine::TokenDtype::kUint32}},
      &c.data.token_dtype);
  enums.Map<v1::TokenLayout, engine::TokenLayout>(
      "data.token_layout", spec.data().token_layout(),
      {{v1::TOKEN_LAYOUT_DOCUMENTS, engine::TokenLayout::kDocuments},
       {v1::TOKEN_LAYOUT_BLOCKS, engine::TokenLayout::kBlocks}},
      &c.data.token_layout);
  enums.Map<v1::CsvHeader, data::CsvHeader>(
      "data.header", spec.data().header(),
      {{v1::CSV_HEADER_UNSPECIFIED, data::CsvHeader::kAuto},
       {v1::CSV_HEADER_AUTO, data::CsvHeader::kAuto},
       {v1::CSV_HEADER_FIRST_LINE, data::CsvHeader::kFirstLine},
       {v1::CSV_HEADER_NONE, data::CsvHeader::kNone}},
      &c.data.csv_header);
  enums.Map<v1::OptimizerKind, engine::OptimizerKind>(
      "optimizer.kind", spec.optimizer().kind(),
      {{v1::OPTIMIZER_KIND_SGD, engine::OptimizerKind::kSgd},
       {v1::OPTIMIZER_KIND_ADAMW, engine::OptimizerKind::kAdamW}},
      &c.optimizer.kind);
  enums.Map<v1::LrScheduleKind, engine::LrScheduleKind>(
      "lr_schedule.kind", spec.lr_schedule().kind(),
      {{v1::LR_SCHEDULE_KIND_CONSTANT, engine::LrScheduleKind::kConstant},
       {v1::LR_SCHEDULE_KIND_COSINE, engine::LrScheduleKind::kCosine},
       {v1::LR_SCHEDULE_KIND_LINEAR, engine::LrScheduleKind::kLinear}},
      &c.lr_schedule.kind);
  if (!enums.status().ok()) return enums.status();
  c.model.hidden.assign(spec.model().hidden().begin(), spec.model().hidden().end());
  c.model.path = spec.model().path();
  c.model.d_model = spec.model().d_model();
  c.model.heads = spec.model().heads();
  c.model.layers = spec.model().layers();
  c.model.checkpoint_activations = spec.model().activation_checkpointing();
  c.data.samples = spec.data().samples();
  c.data.features = spec.data().features();
  c.data.outputs = spec.data().outputs();
  c.data.noise = spec.data().noise();
  c.data.seed = spec.data().seed();
  c.data.channels = spec.data().channels();
  c.data.image_size = spec.data().image_size();
  c.data.sequence_length = spec.data().sequence_length();
  c.data.min_sequence_length = spec.data().min_sequence_length();
  c.data.path = spec.data().path();
  c.data.labels_path = spec.data().labels_path();
  c.data.array = spec.data().array();
  c.data.labels_array = spec.data().labels_array();
  c.data.label_column = spec.data().label_column();
  c.data.label_columns.assign(spec.data().label_columns().begin(),
                              spec.data().label_columns().end());
  c.data.separator = spec.data().separator();
  c.optimizer.lr = spec.optimizer().lr();
  c.optimizer.momentum = spec.optimizer().momentum();
  c.optimizer.weight_decay = spec.optimizer().weight_decay();
  c.optimizer.nesterov = spec.optimizer().nesterov();
  c.optimizer.beta1 = spec.optimizer().beta1();
  c.optimizer.beta2 = spec.optimizer().beta2();
  c.optimizer.eps = spec.optimizer().eps();
  c.micro_batch = batch->micro_batch();
  c.accumulation_steps = batch->accumulation_steps();
  c.nominal_batch = spec.nominal_batch();
  c.auto_micro_batch = spec.auto_micro_batch();
  c.global_batch = batch->global_batch();
  c.memory_limit_bytes =
      spec.memory_limit_bytes() > 0 ? spec.memory_limit_bytes() : task.memory_bytes();
  c.partial_window = ScheduleOf(spec, *batch).policy;
  c.lr_schedule.warmup_steps = spec.lr_schedule().warmup_steps();
  c.lr_schedule.min_lr_ratio = spec.lr_schedule().min_lr_ratio();
  c.lr_scaling = spec.lr_scaling() == v1::LR_SCALING_LINEAR ? engine::LrScaling::kLinear
                 : spec.lr_scaling() == v1::LR_SCALING_SQRT ? engine::LrScaling::kSqrt
                                                            : engine::LrScaling::kNone;
  if (c.lr_scaling != engine::LrScaling::kNone) c.base_batch = spec.base_batch();
  if (spec.adaptive_batch().max_global_batch() > 0) {
    c.adaptive.min_global_batch = spec.adaptive_batch().min_global_batch();
    c.adaptive.max_global_batch = spec.adaptive_batch().max_global_batch();
    if (spec.adaptive_batch().interval_steps() > 0) {
      c.adaptive.interval_steps = spec.adaptive_batch().interval_steps();
    }
  }
  c.world_size = batch->devices();
  c.rank = task.rank();
  c.attempt = task.attempt();
  c.max_grad_norm = spec.max_grad_norm();
  c.max_steps = spec.max_steps();
  c.epochs = spec.epochs();
  c.seed = spec.seed();
  c.normalization = spec.normalization() == v1::NORMALIZATION_PER_MICROBATCH_MEAN
                        ? engine::Normalization::kPerMicrobatchMean
                        : engine::Normalization::kExact;
  c.device = task.device().empty() ? "cpu" : task.device();
  if (task.intra_op_threads() <= 0 && task.blas_threads() <= 0) {
    c.measure_thread_split_cores = std::max(1, task.cores());
  }
  c.output_path = spec.output();
  if (!spec.checkpoint().dir().empty()) {
    c.checkpoint_dir = spec.checkpoint().dir() + "/" + task.job_id();
    c.job_id = task.job_id();
    c.checkpoint_every_steps = spec.checkpoint().every_steps();
    c.checkpoint_keep = spec.checkpoint().keep() > 0 ? spec.checkpoint().keep() : 3;
  }
  c.precision = spec.precision() == v1::PRECISION_BF16   ? engine::Precision::kBf16
                : spec.precision() == v1::PRECISION_FP16 ? engine::Precision::kFp16
                                                         : engine::Precision::kFp32;
  c.loss_scaling = spec.loss_scaling() == v1::LOSS_SCALING_DYNAMIC;
  c.cuda_graphs = spec.cuda_graphs() == v1::CUDA_GRAPHS_ON;
  if (spec.initial_loss_scale() > 0) c.loss_scaler.initial_scale = spec.initial_loss_scale();
  if (spec.loss_scale_growth_interval() > 0) {
    c.loss_scaler.growth_interval = spec.loss_scale_growth_interval();
  }
  c.rendezvous_host = task.rendezvous_host();
  c.rendezvous_port = task.rendezvous_port();
  if (!task.local_address().empty()) c.local_address = task.local_address();
  if (spec.collective_timeout_seconds() > 0) {
    c.collective_timeout_ms = int64_t{1000} * spec.collective_timeout_seconds();
  }
  if (spec.bucket_megabytes() > 0) {
    c.bucket_bytes = static_cast<int64_t>(spec.bucket_megabytes() * 1024 * 1024);
  }
  if (c.world_size > 1 && (c.rendezvous_host.empty() || c.rendezvous_port <= 0)) {
    return Status::InvalidArgument("rank " + std::to_string(c.rank) + " of " +
                                   std::to_string(c.world_size) + " has no rendezvous address");
  }
  return c;
}

}  // namespace accumulus::trainer
