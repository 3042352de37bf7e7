#include "worker/trainer/task_config.h"

#include <algorithm>

#include "common/enum_names.h"
#include "common/job_spec.h"

namespace accumulus::trainer {

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
  c.model.kind = NameOf(spec.model().kind());
  c.model.hidden.assign(spec.model().hidden().begin(), spec.model().hidden().end());
  c.model.norm = NameOf(spec.model().norm());
  c.model.path = spec.model().path();
  c.model.loss = NameOf(spec.model().loss());
  c.model.d_model = spec.model().d_model();
  c.model.heads = spec.model().heads();
  c.model.layers = spec.model().layers();
  c.model.checkpoint_activations = spec.model().activation_checkpointing();
  c.data.kind = NameOf(spec.data().kind());
  c.data.task = NameOf(spec.data().task());
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
  c.data.label_column = spec.data().label_column();
  c.data.token_dtype = NameOf(spec.data().token_dtype());
  c.data.token_layout = NameOf(spec.data().token_layout());
  c.data.separator = spec.data().separator();
  c.optimizer.kind = NameOf(spec.optimizer().kind());
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
  c.memory_limit_bytes = spec.memory_limit_bytes();
  c.partial_window = ScheduleOf(spec, *batch).policy;
  c.lr_schedule.kind = NameOf(spec.lr_schedule().kind());
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
