#include "common/job_spec.h"

#include <gtest/gtest.h>

#include "common/spec_yaml.h"

namespace accumulus {
namespace {

constexpr char kValid[] = R"(
name: test
model: {kind: mlp, hidden: [16]}
data: {kind: synthetic, task: classification, samples: 100, features: 4, outputs: 3}
micro_batch: 8
accumulation_steps: 4
optimizer: {kind: sgd, lr: 0.1, momentum: 0.9}
epochs: 2
seed: 3
)";

v1::JobSpec Parse(const std::string& yaml) {
  StatusOr<v1::JobSpec> spec = ParseJobSpecYaml(yaml, "test.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : v1::JobSpec();
}

TEST(ParseJobSpecYaml, ReadsEveryKindOfField) {
  const v1::JobSpec spec = Parse(kValid);
  EXPECT_EQ(spec.name(), "test");
  EXPECT_EQ(spec.model().kind(), "mlp");
  ASSERT_EQ(spec.model().hidden_size(), 1);
  EXPECT_EQ(spec.model().hidden(0), 16);
  EXPECT_EQ(spec.data().samples(), 100);
  EXPECT_EQ(spec.micro_batch(), 8);
  EXPECT_DOUBLE_EQ(spec.optimizer().lr(), 0.1);
  EXPECT_EQ(spec.seed(), 3u);
}

TEST(ParseJobSpecYaml, QuotedNumbersStayStrings) {
  EXPECT_EQ(Parse("name: '123'\n").name(), "123");
}

TEST(ParseJobSpecYaml, NamesAnUnknownField) {
  StatusOr<v1::JobSpec> spec = ParseJobSpecYaml("micro_bach: 8\n", "job.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(spec.status().message().find("job.yaml"), std::string::npos);
  EXPECT_NE(spec.status().message().find("micro_bach"), std::string::npos);
}

TEST(ParseJobSpecYaml, NamesTheLineOfASyntaxError) {
  StatusOr<v1::JobSpec> spec = ParseJobSpecYaml("name: a\nmodel: [unclosed\n", "job.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("job.yaml: line"), std::string::npos)
      << spec.status().message();
}

TEST(ParseJobSpecYaml, RejectsAWrongType) {
  StatusOr<v1::JobSpec> spec = ParseJobSpecYaml("micro_batch: eight\n", "job.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("micro_batch"), std::string::npos)
      << spec.status().message();
}

TEST(NormalizeJobSpec, FillsDefaults) {
  v1::JobSpec input = Parse(kValid);
  input.clear_devices();
  StatusOr<v1::JobSpec> spec = NormalizeJobSpec(input);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->devices(), 1);
  EXPECT_EQ(spec->normalization(), "exact");
  EXPECT_NE(spec->data().seed(), 0u);
  StatusOr<v1::BatchPlan> batch = ResolveBatchPlan(*spec);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->global_batch(), 32);
  EXPECT_EQ(TotalSteps(*spec, *batch), 2 * 4);  // ceil(100 / 32) = 4 per epoch
}

struct BadField {
  const char* name;
  const char* yaml_line;  // replaces or adds one field of kValid
  const char* message;
};

class NormalizeJobSpecRejection : public ::testing::TestWithParam<BadField> {};

TEST_P(NormalizeJobSpecRejection, NamesFieldAndValue) {
  const BadField& bad = GetParam();
  v1::JobSpec spec = Parse(kValid);
  v1::JobSpec patch = Parse(bad.yaml_line);
  spec.MergeFrom(patch);
  StatusOr<v1::JobSpec> result = NormalizeJobSpec(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(result.status().message(), bad.message);
}

INSTANTIATE_TEST_SUITE_P(
    AllFields, NormalizeJobSpecRejection,
    ::testing::Values(
        BadField{"NameWithAnEscape", "name: \"run\\e[2J\"",
                 "name: character 4 (U+001B) is a control character; a job name is printable "
                 "text"},
        BadField{"NameWithANewline", "name: \"a\\nb\"",
                 "name: character 2 (U+000A) is a control character; a job name is printable "
                 "text"},
        BadField{"NameWithABidiOverride", "name: \"x\\u202Eexe.txt\"",
                 "name: character 2 (U+202E) is a control character; a job name is printable "
                 "text"},
        BadField{
            "NameTooLong",
            "name: "
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "name has 132 bytes; at most 128"},
        BadField{"ModelKind", "model: {kind: resnet}",
                 "model.kind \"resnet\" is not one of \"mlp\", \"cnn\", \"charlm\", "
                 "\"torchscript\""},
        BadField{"ModelForTask", "model: {kind: charlm}",
                 "model.kind \"charlm\" cannot train on data.task \"classification\" (it takes "
                 "\"language_modeling\")"},
        BadField{"Heads", "model: {d_model: 100, heads: 3}",
                 "model.d_model 100 is not divisible by model.heads 3"},
        BadField{"HiddenWidth", "model: {hidden: [0]}", "model.hidden[1] 0 must be positive"},
        BadField{"DataTask", "data: {task: ranking}",
                 "data.task \"ranking\" is not one of \"classification\", \"regression\", "
                 "\"image_classification\", \"language_modeling\""},
        BadField{"Samples", "data: {samples: -5}", "data.samples -5 must be a positive number"},
        BadField{"Classes", "data: {outputs: 1}",
                 "data.outputs 1 must be at least 2 classes for classification"},
        BadField{"Optimizer", "optimizer: {kind: lamb}",
                 "optimizer.kind \"lamb\" is not one of \"sgd\", \"adamw\""},
        BadField{"NegativeLr", "optimizer: {lr: -0.1}",
                 "optimizer.lr -0.1 must be a positive number"},
        BadField{"Momentum", "optimizer: {momentum: 1.5}",
                 "optimizer.momentum 1.5 must be in [0, 1)"},
        BadField{"Normalization", "normalization: mean",
                 "normalization \"mean\" is not one of \"exact\", \"per_microbatch_mean\""},
        BadField{"ClipNorm", "max_grad_norm: -1", "max_grad_norm -1 must be zero or positive"},
        BadField{"Devices", "devices: -2", "devices -2 must be positive"},
        BadField{"PartialWindow", "partial_window: pad",
                 "partial_window \"pad\" is not one of \"normalize\", \"drop\", \"carry\""},
        BadField{"Schedule", "lr_schedule: {kind: step}",
                 "lr_schedule.kind \"step\" is not one of \"constant\", \"cosine\", \"linear\""},
        BadField{"Batch", "global_batch: 100",
                 "global_batch 100 does not equal micro_batch 8 × accumulation_steps 4 × "
                 "devices 1 = 32"}),
    [](const auto& info) { return info.param.name; });

TEST(TotalSteps, FollowsThePartialWindowPolicy) {
  for (const auto& [policy, steps] :
       std::vector<std::pair<std::string, int64_t>>{{"normalize", 8}, {"drop", 6}, {"carry", 7}}) {
    v1::JobSpec spec = Parse(kValid);  // 100 samples, global batch 32, 2 epochs
    spec.set_partial_window(policy);
    StatusOr<v1::JobSpec> normalized = NormalizeJobSpec(spec);
    ASSERT_TRUE(normalized.ok()) << normalized.status().ToString();
    EXPECT_EQ(TotalSteps(*normalized, *ResolveBatchPlan(*normalized)), steps) << policy;
  }
}

TEST(NormalizeJobSpec, NominalBatchDerivesTheAccumulation) {
  v1::JobSpec spec = Parse(kValid);
  spec.clear_accumulation_steps();
  spec.set_nominal_batch(64);
  StatusOr<v1::JobSpec> normalized = NormalizeJobSpec(spec);
  ASSERT_TRUE(normalized.ok()) << normalized.status().ToString();
  EXPECT_EQ(ResolveBatchPlan(*normalized)->accumulation_steps(), 8);

  spec.set_accumulation_steps(4);
  StatusOr<v1::JobSpec> both = NormalizeJobSpec(spec);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("give micro_batch only"), std::string::npos);
}

TEST(NormalizeJobSpec, LinearScalingNeedsABaseBatch) {
  v1::JobSpec spec = Parse(kValid);
  spec.set_lr_scaling("linear");
  StatusOr<v1::JobSpec> result = NormalizeJobSpec(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("needs base_batch"), std::string::npos);
}

TEST(ParseJobSpecYaml, MicroBatchAutoLeavesTheSplitToTheTrainer) {
  v1::JobSpec spec = Parse(kValid);
  spec.MergeFrom(Parse("micro_batch: auto\nglobal_batch: 64\nmemory_limit_bytes: 1000000\n"));
  spec.clear_accumulation_steps();
  EXPECT_TRUE(spec.auto_micro_batch());
  EXPECT_EQ(spec.micro_batch(), 8) << "MergeFrom keeps kValid's micro_batch";
  spec.clear_micro_batch();
  StatusOr<v1::JobSpec> normalized = NormalizeJobSpec(spec);
  ASSERT_TRUE(normalized.ok()) << normalized.status().ToString();
  const v1::BatchPlan plan = *ResolveBatchPlan(*normalized);
  EXPECT_EQ(plan.global_batch(), 64);
  EXPECT_EQ(plan.micro_batch(), 0) << "decided by the trainer's probe";
  EXPECT_EQ(TotalSteps(*normalized, plan), 2 * 2);  // ceil(100 / 64) × 2 epochs

  spec.set_accumulation_steps(4);
  EXPECT_FALSE(NormalizeJobSpec(spec).ok()) << "auto derives accumulation_steps";
}

TEST(NormalizeJobSpec, RequiresAnEnd) {
  v1::JobSpec spec = Parse(kValid);
  spec.set_epochs(0);
  StatusOr<v1::JobSpec> result = NormalizeJobSpec(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("set max_steps or epochs"), std::string::npos);
}

TEST(ParseJobSpecYaml, AnElasticDeviceRangeKeepsTheGlobalBatch) {
  v1::JobSpec spec = Parse(kValid);
  spec.MergeFrom(Parse("devices: {min: 1, max: 4}\n"));
  EXPECT_EQ(spec.devices(), 4);
  EXPECT_EQ(spec.min_devices(), 1);
  StatusOr<v1::JobSpec> normalized = NormalizeJobSpec(spec);
  ASSERT_TRUE(normalized.ok()) << normalized.status().ToString();
  const v1::BatchPlan plan = *ResolveBatchPlan(*normalized);
  EXPECT_EQ(plan.global_batch(), 8 * 4 * 4);

  const v1::BatchPlan on_two = *PlanForDevices(*normalized, plan, 2);
  EXPECT_EQ(on_two.global_batch(), plan.global_batch());
  EXPECT_EQ(on_two.micro_batch(), 8);
  EXPECT_EQ(on_two.accumulation_steps(), 8) << "twice the accumulation on half the devices";
  EXPECT_FALSE(PlanForDevices(*normalized, plan, 3).ok()) << "128 does not split over 3";
}

TEST(ParseJobSpecYaml, ABadDeviceRangeNamesTheField) {
  EXPECT_FALSE(ParseJobSpecYaml("devices: {min: 1}\n", "t.yaml").ok());
  EXPECT_FALSE(ParseJobSpecYaml("devices: {min: 1, max: 2, most: 3}\n", "t.yaml").ok());
  v1::JobSpec spec = Parse(kValid);
  spec.MergeFrom(Parse("devices: {min: 3, max: 2}\n"));
  StatusOr<v1::JobSpec> normalized = NormalizeJobSpec(spec);
  ASSERT_FALSE(normalized.ok());
  EXPECT_EQ(normalized.status().message(), "devices.min 3 must be between 1 and devices.max 2");
}

}  // namespace
}  // namespace accumulus
