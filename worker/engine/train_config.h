// What the engine trains: a plain description with no protobuf, gRPC or
// LibTorch in it, so the engine builds anywhere LibTorch does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/adaptive_batch.h"
#include "common/data/csv_table.h"
#include "common/noise_scale.h"
#include "common/window_schedule.h"
#include "worker/engine/autocast_scope.h"
#include "worker/engine/loss_scaler.h"
#include "worker/engine/lr_schedule.h"

namespace accumulus::engine {

enum class Normalization {
  // Sum-reduced losses; gradients divided once per window by the window's
  // item count. Exact for short windows and any split.
  kExact,
  // Each micro-batch's mean loss divided by the nominal accumulation steps:
  // the tutorial loop, kept for comparison (wrong for short windows).
  kPerMicrobatchMean,
};

enum class ModelKind {
  kMlp,
  kCnn,
  // A causal transformer over bytes.
  kCharLm,
  // A module file saved by torch.jit.save.
  kTorchScript,
};

enum class LossChoice {
  // The data task's own: cross-entropy for classification (per token for
  // language modeling), squared error for regression.
  kByTask,
  kCrossEntropy,
  kMeanSquaredError,
};

struct ModelConfig {
  ModelKind kind = ModelKind::kMlp;
  // torchscript: the module file, on the worker.
  std::string path;
  LossChoice loss = LossChoice::kByTask;
  // mlp: hidden widths; cnn: output channels of its conv blocks.
  std::vector<int64_t> hidden;
  // cnn: Conv → BatchNorm → ReLU → pool (false: Conv → ReLU → pool).
  bool batch_norm = true;
  // charlm: a causal transformer over bytes.
  int64_t d_model = 128;
  int64_t heads = 4;
  int64_t layers = 2;
  // Recompute each block's activations in backward (built-in models).
  bool checkpoint_activations = false;
};

enum class DataKind {
  kSynthetic,
  // A table with a header line.
  kCsv,
  // IDX files (the MNIST format): images or features, and labels.
  kIdx,
  // NumPy .npy files: features or images, and labels.
  kNpy,
  // A flat file of token ids.
  kTokens,
  // Hugging Face safetensors files: features or images, and labels.
  kSafetensors,
};

enum class DataTask {
  kClassification,
  kRegression,
  kImageClassification,
  kLanguageModeling,
};

// How a tokens file stores its ids.
enum class TokenDtype { kUint8, kUint16, kUint32 };

enum class TokenLayout {
  // Documents split at a separator token, each padded to sequence_length
  // (longer ones cut).
  kDocuments,
  // Fixed-length blocks of the token stream.
  kBlocks,
};

struct DataConfig {
  DataKind kind = DataKind::kSynthetic;
  // Files (on the worker): csv: the table; idx, npy: the images (or
  // features) file, with labels in labels_path; tokens: the flat token
  // file. Each may be gzip-compressed or a zip archive of one file
  // (common/data/data_file.h).
  std::string path;
  std::string labels_path;
  // npy: the arrays of .npz archives (path's and labels_path's) to read, by
  // numpy.load's keys; safetensors: the tensors, by name. Empty: a file's
  // one array.
  std::string array;
  std::string labels_array;
  // csv: the label column, by header name or 0-based index (negative counts
  // from the end); empty: the last column, unless label_columns names the
  // targets of a regression (one output each, in their order).
  std::string label_column;
  std::vector<std::string> label_columns;
  // csv: whether the first line names the columns.
  data::CsvHeader csv_header = data::CsvHeader::kAuto;
  // tokens: the ids' width and how they form samples (documents end at
  // `separator`).
  TokenDtype token_dtype = TokenDtype::kUint8;
  TokenLayout token_layout = TokenLayout::kDocuments;
  int64_t separator = 0;
  DataTask task = DataTask::kClassification;
  int64_t samples = 0;
  int64_t features = 0;
  int64_t outputs = 0;  // classes, or regression targets per sample
  double noise = 0;
  uint64_t seed = 0;
  // image_classification: square images of `channels` × image_size².
  int64_t channels = 3;
  int64_t image_size = 32;
  // language_modeling: documents of min..max tokens, padded to
  // sequence_length.
  int64_t sequence_length = 64;
  int64_t min_sequence_length = 8;
};

enum class OptimizerKind { kSgd, kAdamW };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  double lr = 0;
  double momentum = 0;
  double weight_decay = 0;
  bool nesterov = false;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

struct TrainConfig {
  ModelConfig model;
  DataConfig data;
  OptimizerConfig optimizer;
  int64_t micro_batch = 0;
  // Micro-batches per rank and window (ignored when nominal_batch > 0).
  int64_t accumulation_steps = 0;
  // micro_batch: auto. The trainer probes the divisors of global_batch /
  // world_size from the largest down with a real forward + backward and
  // takes the largest whose peak (plus the optimizer state) fits under
  // memory_limit_bytes × (1 - memory_margin); accumulation follows.
  bool auto_micro_batch = false;
  int64_t global_batch = 0;
  // The device's memory budget (0: none): the spec's memory_limit_bytes, or
  // else the device slot's memory. On the CPU it is enforced: an
  // allocation beyond it fails as a CUDA out-of-memory does, and the window
  // is retried with half the micro-batch and twice the accumulation.
  int64_t memory_limit_bytes = 0;
  double memory_margin = 0.1;
  // Nominal-batch mode: accumulation derived (and ramped over the LR
  // warmup), weight decay scaled to the batch used.
  int64_t nominal_batch = 0;
  PartialWindow partial_window = PartialWindow::kNormalize;
  LrScheduleConfig lr_schedule;
  // The learning rate follows the global batch by lr_scaling relative to
  // base_batch (> 0; 0: lr as given).
  LrScaling lr_scaling = LrScaling::kNone;
  int64_t base_batch = 0;
  // The gradient noise scale (common/noise_scale.h): the weight of the past
  // in its moving averages.
  double noise_scale_decay = NoiseScaleEstimator::kDefaultDecay;
  // Adaptive accumulation (max_global_batch > 0): accumulation_steps
  // follows the noise scale within the bounds (common/adaptive_batch.h;
  // batch_per_accumulation is filled in by the trainer).
  AdaptiveBatchConfig adaptive;
  int world_size = 1;
  int rank = 0;
  // The job's attempt this rank belongs to: its fencing token. Checkpoints
  // carry it, and a rank writes nothing once a newer attempt has started
  // (checkpoint_lineage.h).
  int64_t attempt = 0;
  double max_grad_norm = 0;  // 0: measure the norm, never clip
  int64_t max_steps = 0;     // 0: no limit
  int64_t epochs = 0;        // 0: no limit
  uint64_t seed = 0;
  Normalization normalization = Normalization::kExact;
  std::string device = "cpu";
  // > 0 on the CPU: this rank owns that many cores, and before the first
  // window it measures how to split them between LibTorch's intra-op pool
  // and the BLAS (thread_split.h); every rank takes rank 0's choice, and a
  // resumed run keeps the split its checkpoint recorded (so it continues
  // bit-identically). 0: the process's thread counts stay as they are.
  int measure_thread_split_cores = 0;
  Precision precision = Precision::kFp32;
  // On one CUDA device, a micro-batch's forward and backward run as CUDA
  // graph replays once warmed up (micro_batch_graph.h): the same kernels,
  // issued with two launches instead of hundreds.
  bool cuda_graphs = false;
  // Dynamic loss scaling (always on for fp16).
  bool loss_scaling = false;
  LossScalerConfig loss_scaler;
  // Rank 0 writes the final parameters here (empty: nowhere).
  std::string output_path;

  // Checkpoints (empty dir: none). Rank 0 writes one every
  // checkpoint_every_steps optimizer steps (0: only when stopped) and when a
  // stop is requested, keeping the newest checkpoint_keep. A run whose dir
  // holds a checkpoint of the same run resumes from the newest readable one;
  // every rank must see the dir (shared storage across machines).
  std::string checkpoint_dir;
  // The job the run belongs to ("" outside a job): its checkpoints carry
  // it, and a checkpoint of another job is never resumed, whatever
  // directory it lies in.
  std::string job_id;
  int64_t checkpoint_every_steps = 0;
  int64_t checkpoint_keep = 3;

  // Data-parallel jobs (world_size > 1): rendezvous at rank 0's store, this
  // rank's address for collectives, and the all-reduce's settings.
  std::string rendezvous_host;
  int rendezvous_port = 0;
  std::string local_address = "127.0.0.1";
  int64_t collective_timeout_ms = 300000;
  int64_t bucket_bytes = 25 * 1024 * 1024;
};

}  // namespace accumulus::engine
