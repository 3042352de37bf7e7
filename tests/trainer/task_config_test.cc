// The spec a user wrote, as the trainer hands it to the engine: every
// closed set of the .proto reaches the engine's own enum, and a value the
// .proto gains without the engine learning it fails this test.
#include "worker/trainer/task_config.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/enum_names.h"
#include "common/spec_yaml.h"

namespace accumulus::trainer {
namespace {

using engine::DataKind;
using engine::DataTask;
using engine::LossChoice;
using engine::LrScheduleKind;
using engine::ModelKind;
using engine::OptimizerKind;
using engine::TokenDtype;
using engine::TokenLayout;
using engine::TrainConfig;

StatusOr<TrainConfig> ConfigOf(const std::string& yaml) {
  StatusOr<v1::JobSpec> spec = ParseJobSpecYaml(yaml, "job.yaml");
  if (!spec.ok()) return spec.status();
  v1::TrainerTask task;
  task.set_job_id("job-1");
  *task.mutable_spec() = *spec;
  return ToTrainConfig(task);
}

// One spec per row; together they name every value of every closed set.
struct Row {
  std::string yaml;
  ModelKind model;
  bool batch_norm;
  LossChoice loss;
  DataKind data;
  DataTask task;
  TokenDtype token_dtype;
  TokenLayout token_layout;
  OptimizerKind optimizer;
  LrScheduleKind lr_schedule;
  // The .proto values the row spells out, by field.
  std::map<std::string, std::string> names;
};

const std::vector<Row>& Rows() {
  static const std::vector<Row> rows = {
      {R"(
model: {kind: mlp, hidden: [8], loss: cross_entropy}
data: {kind: synthetic, task: classification, samples: 64, features: 4, outputs: 3}
micro_batch: 8
accumulation_steps: 2
optimizer: {kind: sgd, lr: 0.1}
lr_schedule: {kind: constant}
epochs: 1
)",
       ModelKind::kMlp,
       true,
       LossChoice::kCrossEntropy,
       DataKind::kSynthetic,
       DataTask::kClassification,
       TokenDtype::kUint8,
       TokenLayout::kDocuments,
       OptimizerKind::kSgd,
       LrScheduleKind::kConstant,
       {{"model.kind", "mlp"},
        {"model.loss", "cross_entropy"},
        {"data.kind", "synthetic"},
        {"data.task", "classification"},
        {"optimizer.kind", "sgd"},
        {"lr_schedule.kind", "constant"}}},
      {R"(
model: {kind: mlp, hidden: [8], loss: mse}
data: {kind: csv, path: /data/table.csv, task: regression}
micro_batch: 8
accumulation_steps: 2
optimizer: {kind: adamw, lr: 0.001}
lr_schedule: {kind: linear, warmup_steps: 2}
epochs: 1
)",
       ModelKind::kMlp,
       true,
       LossChoice::kMeanSquaredError,
       DataKind::kCsv,
       DataTask::kRegression,
       TokenDtype::kUint8,
       TokenLayout::kDocuments,
       OptimizerKind::kAdamW,
       LrScheduleKind::kLinear,
       {{"model.loss", "mse"},
        {"data.kind", "csv"},
        {"data.task", "regression"},
        {"optimizer.kind", "adamw"},
        {"lr_schedule.kind", "linear"}}},
      {R"(
model: {kind: cnn, hidden: [4], norm: none}
data: {kind: idx, path: /data/images.idx3, labels_path: /data/labels.idx1, task: image_classification}
micro_batch: 8
accumulation_steps: 2
optimizer: {kind: sgd, lr: 0.1}
lr_schedule: {kind: cosine}
epochs: 1
)",
       ModelKind::kCnn,
       false,
       LossChoice::kByTask,
       DataKind::kIdx,
       DataTask::kImageClassification,
       TokenDtype::kUint8,
       TokenLayout::kDocuments,
       OptimizerKind::kSgd,
       LrScheduleKind::kCosine,
       {{"model.kind", "cnn"},
        {"model.norm", "none"},
        {"data.kind", "idx"},
        {"data.task", "image_classification"},
        {"lr_schedule.kind", "cosine"}}},
      {R"(
model: {kind: mlp, hidden: [8]}
data: {kind: npy, path: /data/x.npy, labels_path: /data/y.npy, task: regression}
micro_batch: 8
accumulation_steps: 2
optimizer: {lr: 0.1}
epochs: 1
)",
       ModelKind::kMlp,
       true,
       LossChoice::kByTask,
       DataKind::kNpy,
       DataTask::kRegression,
       TokenDtype::kUint8,
       TokenLayout::kDocuments,
       OptimizerKind::kSgd,
       LrScheduleKind::kConstant,
       {{"data.kind", "npy"}}},
      {R"(
model: {kind: mlp, hidden: [8]}
data: {kind: safetensors, path: /data/d.safetensors, array: x, labels_array: y}
micro_batch: 8
accumulation_steps: 2
optimizer: {lr: 0.1}
epochs: 1
)",
       ModelKind::kMlp,
       true,
       LossChoice::kByTask,
       DataKind::kSafetensors,
       DataTask::kClassification,
       TokenDtype::kUint8,
       TokenLayout::kDocuments,
       OptimizerKind::kSgd,
       LrScheduleKind::kConstant,
       {{"data.kind", "safetensors"}}},
      {R"(
model: {kind: cnn, hidden: [4], norm: batch}
data: {task: image_classification, samples: 64, channels: 1, image_size: 8, outputs: 3}
micro_batch: 8
accumulation_steps: 2
optimizer: {lr: 0.1}
epochs: 1
)",
       ModelKind::kCnn,
       true,
       LossChoice::kByTask,
       DataKind::kSynthetic,
       DataTask::kImageClassification,
       TokenDtype::kUint8,
       TokenLayout::kDocuments,
       OptimizerKind::kSgd,
       LrScheduleKind::kConstant,
       {{"model.norm", "batch"}}},
      {R"(
model: {kind: charlm, d_model: 16, heads: 2, layers: 1}
data: {kind: tokens, path: /data/corpus.u16, token_dtype: uint16, token_layout: blocks, sequence_length: 32}
micro_batch: 8
accumulation_steps: 2
optimizer: {kind: adamw, lr: 0.001}
epochs: 1
)",
       ModelKind::kCharLm,
       true,
       LossChoice::kByTask,
       DataKind::kTokens,
       DataTask::kLanguageModeling,
       TokenDtype::kUint16,
       TokenLayout::kBlocks,
       OptimizerKind::kAdamW,
       LrScheduleKind::kConstant,
       {{"model.kind", "charlm"},
        {"data.kind", "tokens"},
        {"data.task", "language_modeling"},
        {"data.token_dtype", "uint16"},
        {"data.token_layout", "blocks"}}},
      {R"(
model: {kind: charlm, d_model: 16, heads: 2, layers: 1}
data: {kind: tokens, path: /data/corpus.u8, token_dtype: uint8, token_layout: documents, separator: 10}
micro_batch: 8
accumulation_steps: 2
optimizer: {lr: 0.1}
epochs: 1
)",
       ModelKind::kCharLm,
       true,
       LossChoice::kByTask,
       DataKind::kTokens,
       DataTask::kLanguageModeling,
       TokenDtype::kUint8,
       TokenLayout::kDocuments,
       OptimizerKind::kSgd,
       LrScheduleKind::kConstant,
       {{"data.token_dtype", "uint8"}, {"data.token_layout", "documents"}}},
      {R"(
model: {kind: charlm, d_model: 16, heads: 2, layers: 1}
data: {kind: tokens, path: /data/corpus.u32, token_dtype: uint32, separator: 128001}
micro_batch: 8
accumulation_steps: 2
optimizer: {lr: 0.1}
epochs: 1
)",
       ModelKind::kCharLm,
       true,
       LossChoice::kByTask,
       DataKind::kTokens,
       DataTask::kLanguageModeling,
       TokenDtype::kUint32,
       TokenLayout::kDocuments,
       OptimizerKind::kSgd,
       LrScheduleKind::kConstant,
       {{"data.token_dtype", "uint32"}}},
      {R"(
model: {kind: torchscript, path: /models/net.pt}
data: {task: classification, samples: 64, features: 4, outputs: 3}
micro_batch: 8
accumulation_steps: 2
optimizer: {lr: 0.1}
epochs: 1
)",
       ModelKind::kTorchScript,
       true,
       LossChoice::kByTask,
       DataKind::kSynthetic,
       DataTask::kClassification,
       TokenDtype::kUint8,
       TokenLayout::kDocuments,
       OptimizerKind::kSgd,
       LrScheduleKind::kConstant,
       {{"model.kind", "torchscript"}}},
  };
  return rows;
}

TEST(ToTrainConfig, EveryClosedSetOfTheSpecReachesTheEngine) {
  for (const Row& row : Rows()) {
    SCOPED_TRACE(row.yaml);
    const StatusOr<TrainConfig> c = ConfigOf(row.yaml);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->model.kind, row.model);
    EXPECT_EQ(c->model.batch_norm, row.batch_norm);
    EXPECT_EQ(c->model.loss, row.loss);
    EXPECT_EQ(c->data.kind, row.data);
    EXPECT_EQ(c->data.task, row.task);
    EXPECT_EQ(c->data.token_dtype, row.token_dtype);
    EXPECT_EQ(c->data.token_layout, row.token_layout);
    EXPECT_EQ(c->optimizer.kind, row.optimizer);
    EXPECT_EQ(c->lr_schedule.kind, row.lr_schedule);
  }
}

// The rows above spell out every value the .proto has: a value added there
// must be added to the trainer's mapping and to a row here.
TEST(ToTrainConfig, TheRowsCoverEveryValueOfTheProto) {
  std::map<std::string, std::set<std::string>> covered;
  for (const Row& row : Rows()) {
    for (const auto& [field, name] : row.names) covered[field].insert(name);
  }
  const std::map<std::string, const google::protobuf::EnumDescriptor*> fields = {
      {"model.kind", &EnumTypeOf<v1::ModelKind>()},
      {"model.norm", &EnumTypeOf<v1::NormLayer>()},
      {"model.loss", &EnumTypeOf<v1::Loss>()},
      {"data.kind", &EnumTypeOf<v1::DataKind>()},
      {"data.task", &EnumTypeOf<v1::DataTask>()},
      {"data.token_dtype", &EnumTypeOf<v1::TokenDtype>()},
      {"data.token_layout", &EnumTypeOf<v1::TokenLayout>()},
      {"optimizer.kind", &EnumTypeOf<v1::OptimizerKind>()},
      {"lr_schedule.kind", &EnumTypeOf<v1::LrScheduleKind>()},
  };
  for (const auto& [field, type] : fields) {
    std::set<std::string> names;
    for (const std::string& name : EnumValueNameList(*type)) names.insert(name);
    EXPECT_EQ(covered[field], names) << field;
  }
}

// A small valid spec that leaves every closed set unset.
constexpr char kSmallSpec[] = R"(
model: {kind: mlp, hidden: [8]}
data: {samples: 64, features: 4, outputs: 3}
micro_batch: 8
accumulation_steps: 2
optimizer: {lr: 0.1}
epochs: 1
)";

TEST(ToTrainConfig, AnUnsetClosedSetTakesTheDocumentedDefault) {
  const StatusOr<TrainConfig> c = ConfigOf(kSmallSpec);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->model.loss, LossChoice::kByTask);
  EXPECT_EQ(c->data.kind, DataKind::kSynthetic);
  EXPECT_EQ(c->data.task, DataTask::kClassification);
  EXPECT_EQ(c->optimizer.kind, OptimizerKind::kSgd);
  EXPECT_EQ(c->lr_schedule.kind, LrScheduleKind::kConstant);
  EXPECT_TRUE(c->model.batch_norm);
}

TEST(ToTrainConfig, TheMemoryBudgetIsTheSpecsOrElseTheDeviceSlots) {
  StatusOr<v1::JobSpec> spec = ParseJobSpecYaml(kSmallSpec, "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  v1::TrainerTask task;
  *task.mutable_spec() = *spec;
  task.set_memory_bytes(3'000'000'000);
  StatusOr<TrainConfig> c = ToTrainConfig(task);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->memory_limit_bytes, 3'000'000'000) << "the slot's, where the spec sets none";

  task.mutable_spec()->set_memory_limit_bytes(1'000'000'000);
  c = ToTrainConfig(task);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->memory_limit_bytes, 1'000'000'000) << "the spec's wins";

  task.set_memory_bytes(0);
  task.mutable_spec()->set_memory_limit_bytes(0);
  c = ToTrainConfig(task);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->memory_limit_bytes, 0) << "neither: no budget";
}

TEST(ToTrainConfig, CsvTargetsKeepTheirColumnsOrderAndTheFilesCount) {
  const StatusOr<TrainConfig> c = ConfigOf(R"(
model: {kind: mlp}
data: {kind: csv, path: /data/t.csv, task: regression, label_columns: [y2, "0"]}
micro_batch: 8
accumulation_steps: 2
optimizer: {lr: 0.1}
epochs: 1
)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->data.label_columns, (std::vector<std::string>{"y2", "0"}));
  EXPECT_EQ(c->data.label_column, "");
  EXPECT_EQ(c->data.outputs, 0) << "the targets are counted from the file";
}

// Every name of data.header (the rows below spell them all out) reaches
// the engine; none given is auto.
TEST(ToTrainConfig, CsvHeaderIsWhatTheSpecSettlesOrAuto) {
  std::set<std::string> covered;
  for (const auto& [given, header] : std::vector<std::pair<std::string, data::CsvHeader>>{
           {"", data::CsvHeader::kAuto},
           {"auto", data::CsvHeader::kAuto},
           {"first_line", data::CsvHeader::kFirstLine},
           {"none", data::CsvHeader::kNone}}) {
    const StatusOr<TrainConfig> c =
        ConfigOf("model: {kind: mlp}\ndata: {kind: csv, path: t.csv" +
                 (given.empty() ? "" : ", header: " + given) +
                 "}\nmicro_batch: 8\naccumulation_steps: 2\noptimizer: {lr: 0.1}\nepochs: 1\n");
    ASSERT_TRUE(c.ok()) << given << ": " << c.status().ToString();
    EXPECT_EQ(c->data.csv_header, header) << given;
    if (!given.empty()) covered.insert(given);
  }
  const std::vector<std::string> names = EnumValueNameList(EnumTypeOf<v1::CsvHeader>());
  EXPECT_EQ(covered, std::set<std::string>(names.begin(), names.end()));
}

TEST(ToTrainConfig, AnInvalidSpecIsRefusedWithItsField) {
  StatusOr<v1::JobSpec> spec = ParseJobSpecYaml(kSmallSpec, "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  // A number no name of the enum has, as a client on a newer .proto sends.
  spec->mutable_optimizer()->set_kind(static_cast<v1::OptimizerKind>(42));
  v1::TrainerTask task;
  *task.mutable_spec() = *spec;
  const StatusOr<TrainConfig> c = ToTrainConfig(task);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("optimizer.kind"), std::string::npos)
      << c.status().ToString();
}

}  // namespace
}  // namespace accumulus::trainer
