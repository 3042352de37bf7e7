#include "common/job_spec.h"

#include <gtest/gtest.h>

#include <filesystem>

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
  EXPECT_EQ(spec.model().kind(), v1::MODEL_KIND_MLP);
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

// What a hostile or careless YAML file gets: a clear error naming the file,
// the line and the field, never a crash, never the words of JSON.
std::string YamlError(const std::string& yaml) {
  StatusOr<v1::JobSpec> spec = ParseJobSpecYaml(yaml, "job.yaml");
  EXPECT_FALSE(spec.ok()) << yaml;
  if (spec.ok()) return "";
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  return std::string(spec.status().message());
}

TEST(ParseJobSpecYaml, RefusesAFieldGivenTwice) {
  EXPECT_EQ(YamlError("micro_batch: 8\nname: a\nmicro_batch: 16\n"),
            "job.yaml: line 3: micro_batch is given twice (first on line 1)");
  EXPECT_EQ(YamlError("optimizer:\n  kind: sgd\n  lr: 0.1\n  lr: 0.2\n"),
            "job.yaml: line 4: optimizer.lr is given twice (first on line 3)");
}

TEST(ParseJobSpecYaml, RefusesKeysThatAreNotNames) {
  EXPECT_EQ(YamlError("? [a, b]\n: 1\n"),
            "job.yaml: line 1: a key of the spec is a list or a mapping; keys are field names");
  EXPECT_EQ(YamlError("model: {{kind: mlp}: 1}\n"),
            "job.yaml: line 1: a key of model is a list or a mapping; keys are field names");
  EXPECT_NE(YamlError("devices: {[min]: 1, max: 2}\n").find("a key of devices"), std::string::npos);
}

TEST(ParseJobSpecYaml, RefusesNonFiniteNumbersInTheSpecsTerms) {
  EXPECT_EQ(YamlError("optimizer: {lr: .nan}\n"),
            "job.yaml: line 1: optimizer.lr .nan is not a finite number");
  EXPECT_EQ(YamlError("max_grad_norm: -.Inf\n"),
            "job.yaml: line 1: max_grad_norm -.Inf is not a finite number");
  EXPECT_EQ(YamlError("name: a\nmax_grad_norm: inf\n"),
            "job.yaml: line 2: max_grad_norm inf is not a finite number");
  EXPECT_EQ(YamlError("max_grad_norm: 1e999\n"),
            "job.yaml: line 1: max_grad_norm 1e999 is out of range");
  EXPECT_EQ(YamlError("model: {hidden: [8, NaN]}\n"),
            "job.yaml: line 1: model.hidden[1] NaN is not a finite number");
}

// Anchors may stand only where the spec takes a value, so an expansion
// that grows is one of merge keys, each level merging the one before ten
// times: nine levels are a billion visits in ten lines.
std::string MergeBomb(int levels) {
  std::string yaml = "model:\n  <<:\n    - &a0 {kind: mlp}\n";
  for (int i = 1; i <= levels; ++i) {
    yaml += "    - &a" + std::to_string(i) + " {<<: [";
    for (int k = 0; k < 10; ++k) yaml += (k ? ", *a" : "*a") + std::to_string(i - 1);
    yaml += "]}\n";
  }
  return yaml;
}

TEST(ParseJobSpecYaml, BoundsAliasExpansionAndNesting) {
  EXPECT_NE(YamlError(MergeBomb(9))
                .find("the spec stands for more than 100000 values (YAML aliases expanding?)"),
            std::string::npos);
  EXPECT_EQ(Parse(MergeBomb(3)).model().kind(), v1::MODEL_KIND_MLP) << "a thousand is fine";
  std::string deep = "{kind: mlp}";
  for (int i = 0; i < 40; ++i) deep = "{<<: " + deep + "}";
  EXPECT_NE(YamlError("model: " + deep + "\n").find("model is nested deeper than 32 levels"),
            std::string::npos);
  // Far deeper: yaml-cpp refuses it itself, an error at the line, not a crash.
  const std::string abyss = std::string(5000, '[') + std::string(5000, ']');
  EXPECT_EQ(YamlError("name: " + abyss + "\n").rfind("job.yaml: line 1", 0), 0u);
  // A mapping that merges itself: a cycle, stopped by the nesting bound.
  EXPECT_NE(YamlError("model: &a {<<: *a}\n").find("nested deeper"), std::string::npos);
  // An anchor on a key that is no field is refused before anything expands.
  EXPECT_EQ(YamlError("defaults: &d [8, 8]\nmodel: {hidden: *d}\n"),
            "job.yaml: line 1: defaults is not a field (one of " +
                std::string("accumulation_steps, adaptive_batch, auto_micro_batch, base_batch, "
                            "bucket_megabytes, checkpoint, collective_timeout_seconds, "
                            "cuda_graphs, data, devices, epochs, global_batch, "
                            "initial_loss_scale, labels, loss_scale_growth_interval, "
                            "loss_scaling, lr_scaling, lr_schedule, max_grad_norm, "
                            "max_restarts, max_steps, memory_limit_bytes, micro_batch, "
                            "min_devices, model, name, nominal_batch, normalization, optimizer, "
                            "output, partial_window, precision, seed, threads)"));
}

TEST(ParseJobSpecYaml, MergeKeysFillInWhatAMappingDoesNotSay) {
  const v1::JobSpec spec = Parse(
      "model: {kind: mlp, hidden: &h [8, 8]}\n"
      "optimizer:\n"
      "  <<: [&sgd {kind: sgd, lr: 0.5, momentum: 0.9}, {lr: 0.7, weight_decay: 0.1}]\n"
      "  lr: 0.1\n"
      "data: {<<: {samples: 10}, features: 3}\n");
  EXPECT_EQ(spec.model().hidden_size(), 2);
  EXPECT_EQ(spec.optimizer().kind(), v1::OPTIMIZER_KIND_SGD);
  EXPECT_DOUBLE_EQ(spec.optimizer().lr(), 0.1) << "its own key wins";
  EXPECT_DOUBLE_EQ(spec.optimizer().momentum(), 0.9);
  EXPECT_DOUBLE_EQ(spec.optimizer().weight_decay(), 0.1) << "the second merged mapping's";
  EXPECT_EQ(spec.data().samples(), 10);
  EXPECT_EQ(YamlError("model: {<<: [8]}\n"),
            "job.yaml: line 1: << in model takes a mapping or a list of mappings");
  EXPECT_EQ(YamlError("model: {<<: {kind: mlp, depth: 3}}\n"),
            "job.yaml: line 1: model.depth is not a field (one of activation_checkpointing, "
            "d_model, heads, hidden, kind, layers, loss, norm, path)");
}

TEST(ParseJobSpecYaml, EveryValueMustBeOfItsFieldsType) {
  EXPECT_EQ(YamlError("global_batch: 4.5\n"),
            "job.yaml: line 1: global_batch 4.5 is not a whole number");
  EXPECT_EQ(YamlError("global_batch: true\n"),
            "job.yaml: line 1: global_batch \"true\" is not a number");
  EXPECT_EQ(YamlError("name: a\nmicro_batch: eight\n"),
            "job.yaml: line 2: micro_batch \"eight\" is not a number");
  EXPECT_EQ(YamlError("devices: 3000000000\n"),
            "job.yaml: line 1: devices 3000000000 is out of range (-2147483648 to 2147483647)");
  EXPECT_EQ(YamlError("model: {hidden: [8, 99999999999999999999]}\n"),
            "job.yaml: line 1: model.hidden[1] 99999999999999999999 is out of range "
            "(-9223372036854775808 to 9223372036854775807)");
  EXPECT_EQ(YamlError("seed: -1\n"),
            "job.yaml: line 1: seed -1 is out of range (0 to 18446744073709551615)");
  EXPECT_EQ(YamlError("memory_limit_bytes: 1e300\n"),
            "job.yaml: line 1: memory_limit_bytes 1e300 is too large for its exponent form; "
            "write its digits");
  EXPECT_EQ(YamlError("model: {activation_checkpointing: yes}\n"),
            "job.yaml: line 1: model.activation_checkpointing \"yes\" is not true or false");
  EXPECT_EQ(YamlError("model: {activation_checkpointing: 'true'}\n"),
            "job.yaml: line 1: model.activation_checkpointing \"true\" is not true or false");
  EXPECT_EQ(YamlError("model: [mlp]\n"),
            "job.yaml: line 1: model must be a mapping of fields, not a list");
  EXPECT_EQ(YamlError("model: {hidden: 8}\n"),
            "job.yaml: line 1: model.hidden must be a list, not a single value");
  EXPECT_EQ(YamlError("model: {hidden: [8, ~]}\n"),
            "job.yaml: line 1: model.hidden[1] has no value");
  EXPECT_EQ(YamlError("name: [a]\n"), "job.yaml: line 1: name must be a single value, not a list");
  EXPECT_EQ(YamlError("labels: [a]\n"), "job.yaml: line 1: labels must be a mapping, not a list");
  EXPECT_EQ(YamlError("labels:\n  team: vision\n  owner:\n"),
            "job.yaml: line 3: labels.owner has no value");
  // What is of the type is taken as written.
  const v1::JobSpec spec = Parse(
      "name: 123\nmemory_limit_bytes: 2e9\nglobal_batch: 64.0\nmicro_batch: '8'\nseed: "
      "18446744073709551615\nlabels: {sweep: 3, on: off}\nmax_steps: ~\n");
  EXPECT_EQ(spec.name(), "123");
  EXPECT_EQ(spec.memory_limit_bytes(), 2000000000);
  EXPECT_EQ(spec.global_batch(), 64);
  EXPECT_EQ(spec.micro_batch(), 8);
  EXPECT_EQ(spec.seed(), UINT64_MAX);
  EXPECT_EQ(spec.labels().at("sweep"), "3");
  EXPECT_EQ(spec.labels().at("on"), "off");
  EXPECT_EQ(spec.max_steps(), 0) << "an empty value is not given";
  EXPECT_EQ(Parse("devices: -2147483648\n").devices(), INT32_MIN);
}

TEST(ParseJobSpecYaml, AMisspeltKeyGetsTheFieldItMeant) {
  EXPECT_EQ(YamlError("micro_bach: 8\n"),
            "job.yaml: line 1: micro_bach is not a field; did you mean micro_batch?");
  EXPECT_EQ(YamlError("globalBatch: 8\n"),
            "job.yaml: line 1: globalBatch is not a field; did you mean global_batch?");
  EXPECT_EQ(YamlError("optimizer:\n  lr: 0.1\n  momentun: 0.9\n"),
            "job.yaml: line 3: optimizer.momentun is not a field; did you mean momentum?");
  EXPECT_EQ(YamlError("model: {\"\\e[31mkind\": mlp}\n"),
            "job.yaml: line 1: model.(a 9-byte string) is not a field (one of "
            "activation_checkpointing, d_model, heads, hidden, kind, layers, loss, norm, path)")
      << "a key is shown only when it is printable";
}

TEST(ParseJobSpecYaml, AJobSpecIsOneDocument) {
  EXPECT_EQ(YamlError("name: a\n---\nname: b\n"),
            "job.yaml: line 3: a second YAML document; a job spec is one document");
  EXPECT_EQ(Parse("---\nname: a\n---\n").name(), "a") << "markers around one document";
  EXPECT_EQ(Parse("name: a\n...\n").name(), "a");
}

// yaml-cpp's parser stalls on a token no node begins with (a stray `,`):
// its LoadAll then loops forever, and its Load ignores the rest of the file.
TEST(ParseJobSpecYaml, TextNoValueBeginsWithIsAnErrorAtItsPlace) {
  EXPECT_EQ(YamlError(","),
            "job.yaml: line 1, column 1: unexpected \",\" where a YAML value or a new document "
            "must begin");
  EXPECT_EQ(YamlError("[name]\n,\n"),
            "job.yaml: line 2, column 1: unexpected \",\" where a YAML value or a new document "
            "must begin");
  EXPECT_EQ(YamlError("name: a\n---\n,\n"),
            "job.yaml: line 3, column 1: unexpected \",\" where a YAML value or a new document "
            "must begin");
}

TEST(ParseJobSpecYaml, ControlCharactersInAStringReachTheSpecIntact) {
  StatusOr<v1::JobSpec> spec = ParseJobSpecYaml("name: \"a\\x01b\\tc\"\n", "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name(),
            "a\x01"
            "b\tc")
      << "(and NormalizeJobSpec refuses them in a name)";
}

TEST(ParseJobSpecYaml, OnlyJsonNumbersAreNumbers) {
  // Hex is no number of a spec: it is a string, refused as a wrong type.
  EXPECT_NE(YamlError("micro_batch: 0x10\n").find("micro_batch"), std::string::npos);
  EXPECT_EQ(Parse("max_grad_norm: 1.5e-1\n").max_grad_norm(), 0.15);
  EXPECT_EQ(Parse("seed: -0\n").seed(), 0u);
}

TEST(NormalizeJobSpec, FillsDefaults) {
  v1::JobSpec input = Parse(kValid);
  input.clear_devices();
  StatusOr<v1::JobSpec> spec = NormalizeJobSpec(input);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->devices(), 1);
  EXPECT_EQ(spec->normalization(), v1::NORMALIZATION_EXACT);
  EXPECT_EQ(spec->cuda_graphs(), v1::CUDA_GRAPHS_OFF);
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
  ASSERT_EQ(result.status().field_violations().size(), 1u) << "one field wrong, one violation";
  EXPECT_EQ(result.status().field_violations()[0].description, bad.message);
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
        BadField{"ModelForTask", "model: {kind: charlm}",
                 "model.kind \"charlm\" cannot train on data.task \"classification\" (it takes "
                 "\"language_modeling\")"},
        BadField{"TokensForClassification", "data: {kind: tokens, path: t.bin}",
                 "data.kind \"tokens\" holds token sequences, for data.task "
                 "\"language_modeling\" (got \"classification\")"},
        BadField{"LanguageModelingOnATable",
                 "model: {kind: charlm}\ndata: {kind: csv, path: t.csv, task: language_modeling}",
                 "data.task \"language_modeling\" reads token sequences: data.kind \"tokens\" "
                 "(got \"csv\")"},
        BadField{"MseOnClassLabels", "model: {loss: mse}",
                 "model.loss \"mse\" needs the real-valued targets of data.task \"regression\"; "
                 "data.task \"classification\" has class labels: leave model.loss out "
                 "(cross_entropy)"},
        BadField{"CrossEntropyOnRealTargets",
                 "model: {loss: cross_entropy}\ndata: {task: regression}",
                 "model.loss \"cross_entropy\" needs class labels; data.task \"regression\" has "
                 "real-valued targets: leave model.loss out (mse), or make them classes with "
                 "data.task \"classification\""},
        BadField{"Heads", "model: {d_model: 100, heads: 3}",
                 "model.d_model 100 is not divisible by model.heads 3"},
        BadField{"HiddenWidth", "model: {hidden: [0]}", "model.hidden[1] 0 must be positive"},
        BadField{"Samples", "data: {samples: -5}", "data.samples -5 must not be negative"},
        BadField{
            "Uint8Separator",
            "model: {kind: charlm}\ndata: {kind: tokens, path: t.bin, task: language_modeling, "
            "separator: 256}",
            "data.separator 256 is not a uint8 token id (0 to 255; data.token_dtype "
            "\"uint16\" has 0 to 65535)"},
        BadField{
            "Uint16Separator",
            "model: {kind: charlm}\ndata: {kind: tokens, path: t.bin, task: language_modeling, "
            "token_dtype: uint16, separator: 65536}",
            "data.separator 65536 is not a uint16 token id (0 to 65535; data.token_dtype "
            "\"uint32\" has 0 to 4294967295)"},
        BadField{"NpyLabels", "data: {kind: npy, path: x.npy}",
                 "data.labels_path is required for data.kind \"npy\" (or data.labels_array, for "
                 "labels in data.path's .npz archive)"},
        BadField{"IdxLabels", "data: {kind: idx, path: x.idx}",
                 "data.labels_path is required for data.kind \"idx\""},
        BadField{"ArrayOfAnIdxFile",
                 "data: {kind: idx, path: x.idx, labels_path: y.idx, array: x_train}",
                 "data.array names an array of a .npz archive or a safetensors file: it applies "
                 "to data.kind \"npy\" and \"safetensors\" only, not \"idx\""},
        BadField{"LabelsArrayOfACsv", "data: {kind: csv, path: t.csv, labels_array: y}",
                 "data.labels_array names an array of a .npz archive or a safetensors file: it "
                 "applies to data.kind \"npy\" and \"safetensors\" only, not \"csv\""},
        BadField{"ArrayWithANewline",
                 "data: {kind: npy, path: d.npz, array: \"x\\ny\", labels_array: y}",
                 "data.array: character 2 (U+000A) is a control character; an array's name is "
                 "printable text"},
        BadField{"Classes", "data: {outputs: 1}",
                 "data.outputs 1 must be at least 2 classes for classification"},
        BadField{"LabelColumnAndColumns",
                 "data: {kind: csv, path: t.csv, label_column: y, label_columns: [y]}",
                 "give data.label_column (one label) or data.label_columns (several targets), "
                 "not both"},
        BadField{"SeveralLabelColumnsForClasses",
                 "data: {kind: csv, path: t.csv, label_columns: [a, b]}",
                 "data.label_columns names 2 columns: several label columns are the targets of "
                 "data.task \"regression\", and \"classification\" takes one label "
                 "(data.label_column)"},
        BadField{"RepeatedLabelColumn",
                 "data: {kind: csv, path: t.csv, task: regression, outputs: 2, label_columns: "
                 "[a, a]}",
                 "data.label_columns[1] repeats data.label_columns[0]: each target is one column"},
        BadField{"OutputsNotTheLabelColumns",
                 "data: {kind: csv, path: t.csv, task: regression, label_columns: [a, b]}",
                 "data.outputs 3 is not the 2 target(s) of data.label_columns (one output per "
                 "label column)"},
        BadField{"LabelColumnOfAnArray",
                 "data: {kind: npy, path: x.npy, labels_path: y.npy, label_column: y}",
                 "data.label_column applies to data.kind \"csv\" only, not \"npy\""},
        BadField{"HeaderOfAnArray",
                 "data: {kind: npy, path: x.npy, labels_path: y.npy, header: none}",
                 "data.header applies to data.kind \"csv\" only, not \"npy\""},
        BadField{"LabelColumnByNameWithoutAHeader",
                 "data: {kind: csv, path: t.csv, header: none, label_column: species}",
                 "data.label_column \"species\" is a column name, and data.header \"none\" says "
                 "the file has no header line to find it in: give the column's 0-based index"},
        BadField{"LabelColumnsByNameWithoutAHeader",
                 "data: {kind: csv, path: t.csv, task: regression, header: none, outputs: 2, "
                 "label_columns: [\"-1\", y2]}",
                 "data.label_columns[1] \"y2\" is a column name, and data.header \"none\" says "
                 "the file has no header line to find it in: give the column's 0-based index"},
        BadField{"NegativeLr", "optimizer: {lr: -0.1}",
                 "optimizer.lr -0.1 must be a positive number"},
        BadField{"Momentum", "optimizer: {momentum: 1.5}",
                 "optimizer.momentum 1.5 must be in [0, 1)"},
        BadField{"ClipNorm", "max_grad_norm: -1", "max_grad_norm -1 must be zero or positive"},
        BadField{"Devices", "devices: -2", "devices -2 must be positive"},
        BadField{"Batch", "global_batch: 100",
                 "global_batch 100 does not equal micro_batch 8 × accumulation_steps 4 × "
                 "devices 1 = 32"}),
    [](const auto& info) { return info.param.name; });

// A closed set's value that the enum does not name (a raw client's, or a
// newer one's) is refused by its number; none at all where one is needed
// lists the names.
// A file's targets per sample are the file's (a CSV file's label columns,
// an array's second dimension) unless the spec declares them; synthetic
// data has one.
TEST(NormalizeJobSpec, RegressionOutputsOfAFileAreTheFiles) {
  for (const char* data : {"{kind: csv, path: t.csv, task: regression}",
                           "{kind: csv, path: t.csv, task: regression, label_columns: [a, b]}",
                           "{kind: npy, path: x.npy, labels_path: y.npy, task: regression}",
                           "{kind: idx, path: x.idx, labels_path: y.idx, task: regression}"}) {
    const StatusOr<v1::JobSpec> spec = NormalizeJobSpec(
        Parse(std::string("model: {kind: mlp}\ndata: ") + data +
              "\nmicro_batch: 8\naccumulation_steps: 1\noptimizer: {lr: 0.1}\nepochs: 1\n"));
    ASSERT_TRUE(spec.ok()) << data << ": " << spec.status().ToString();
    EXPECT_EQ(spec->data().outputs(), 0) << data;
  }
  v1::JobSpec synthetic = Parse(kValid);
  synthetic.mutable_data()->set_task(v1::DATA_TASK_REGRESSION);
  synthetic.mutable_data()->clear_outputs();
  const StatusOr<v1::JobSpec> spec = NormalizeJobSpec(synthetic);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->data().outputs(), 1);
}

// Labels named by an array and no file are in the samples' .npz archive, a
// safetensors file's labels in the samples' file; a file named for them is
// theirs.
TEST(NormalizeJobSpec, LabelsBesideTheSamplesAreInTheSamplesFileUnlessNamedElsewhere) {
  const auto normalized = [](const std::string& data) {
    return NormalizeJobSpec(Parse("model: {kind: mlp}\ndata: " + data +
                                  "\nmicro_batch: 8\naccumulation_steps: 1\noptimizer: {lr: "
                                  "0.1}\nepochs: 1\n"));
  };
  const StatusOr<v1::JobSpec> same =
      normalized("{kind: npy, path: mnist.npz, array: x_train, labels_array: y_train}");
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(same->data().labels_path(), "mnist.npz");
  EXPECT_EQ(same->data().array(), "x_train");
  EXPECT_EQ(same->data().labels_array(), "y_train");
  const StatusOr<v1::JobSpec> other =
      normalized("{kind: npy, path: x.npz, labels_path: y.npz, labels_array: y}");
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(other->data().labels_path(), "y.npz");
  const StatusOr<v1::JobSpec> tensors =
      normalized("{kind: safetensors, path: d.safetensors, array: x, labels_array: y}");
  ASSERT_TRUE(tensors.ok()) << tensors.status().ToString();
  EXPECT_EQ(tensors->data().labels_path(), "d.safetensors") << "a safetensors file's own labels";
  const StatusOr<v1::JobSpec> npy = normalized("{kind: npy, path: x.npy}");
  EXPECT_FALSE(npy.ok()) << "a .npy file holds no labels beside its samples";
}

// A CSV file's header is told from its line unless the spec settles it;
// an index names a column whether or not the file has a header.
TEST(NormalizeJobSpec, CsvHeaderIsAutoUnlessSettled) {
  const auto normalized = [](const std::string& data) {
    return NormalizeJobSpec(Parse("model: {kind: mlp}\ndata: " + data +
                                  "\nmicro_batch: 8\naccumulation_steps: 1\noptimizer: {lr: "
                                  "0.1}\nepochs: 1\n"));
  };
  const StatusOr<v1::JobSpec> csv = normalized("{kind: csv, path: t.csv}");
  ASSERT_TRUE(csv.ok()) << csv.status().ToString();
  EXPECT_EQ(csv->data().header(), v1::CSV_HEADER_AUTO);
  const StatusOr<v1::JobSpec> npy = normalized("{kind: npy, path: x.npy, labels_path: y.npy}");
  ASSERT_TRUE(npy.ok()) << npy.status().ToString();
  EXPECT_EQ(npy->data().header(), v1::CSV_HEADER_UNSPECIFIED) << "a CSV file's only";
  for (const char* data : {"{kind: csv, path: t.csv, header: none, label_column: \"-1\"}",
                           "{kind: csv, path: t.csv, header: none, label_column: \"2\"}",
                           "{kind: csv, path: t.csv, header: first_line, label_column: y}"}) {
    const StatusOr<v1::JobSpec> spec = normalized(data);
    ASSERT_TRUE(spec.ok()) << data << ": " << spec.status().ToString();
  }
  v1::JobSpec raw = Parse(kValid);
  raw.mutable_data()->set_kind(v1::DATA_KIND_CSV);
  raw.mutable_data()->set_path("t.csv");
  raw.mutable_data()->set_header(static_cast<v1::CsvHeader>(9));
  EXPECT_EQ(NormalizeJobSpec(raw).status().message(),
            "data.header 9 is not one of auto, first_line, none");
}

// What a raw client may send that YAML would not.
TEST(NormalizeJobSpec, LabelColumnsAreNamesOfBoundedCount) {
  v1::JobSpec spec = Parse(kValid);
  v1::DataSpec* data = spec.mutable_data();
  data->set_kind(v1::DATA_KIND_CSV);
  data->set_path("t.csv");
  data->set_task(v1::DATA_TASK_REGRESSION);
  data->clear_outputs();
  data->add_label_columns("a");
  data->add_label_columns("");
  StatusOr<v1::JobSpec> result = NormalizeJobSpec(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "data.label_columns[1] is empty; name a column (or give its index)");
  data->set_label_columns(1, "b\x1b[2J");
  result = NormalizeJobSpec(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "data.label_columns[1]: character 2 (U+001B) is a control character; a column name "
            "is printable text");
  data->clear_label_columns();
  for (int i = 0; i <= kMaxLabelColumns; ++i) data->add_label_columns(std::to_string(i));
  result = NormalizeJobSpec(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "data.label_columns has 1025 columns; at most 1024");
  data->mutable_label_columns()->RemoveLast();
  EXPECT_TRUE(NormalizeJobSpec(spec).ok()) << "1024 targets are within the limit";
}

TEST(NormalizeJobSpec, AClosedSetTakesOnlyItsOwnValues) {
  v1::JobSpec spec = Parse(kValid);
  spec.mutable_optimizer()->set_kind(static_cast<v1::OptimizerKind>(7));
  StatusOr<v1::JobSpec> result = NormalizeJobSpec(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "optimizer.kind 7 is not one of sgd, adamw");

  spec = Parse(kValid);
  spec.mutable_model()->clear_kind();
  result = NormalizeJobSpec(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "model.kind is required (one of mlp, cnn, charlm, torchscript)");
}

TEST(NormalizeJobSpec, CudaGraphsAreOnOrOff) {
  v1::JobSpec spec = Parse(kValid);
  spec.MergeFrom(Parse("cuda_graphs: on"));
  StatusOr<v1::JobSpec> result = NormalizeJobSpec(spec);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->cuda_graphs(), v1::CUDA_GRAPHS_ON);

  spec.set_cuda_graphs(static_cast<v1::CudaGraphs>(9));
  result = NormalizeJobSpec(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "cuda_graphs 9 is not one of off, on");
}

TEST(TotalSteps, FollowsThePartialWindowPolicy) {
  for (const auto& [policy, steps] :
       std::vector<std::pair<v1::PartialWindow, int64_t>>{{v1::PARTIAL_WINDOW_NORMALIZE, 8},
                                                          {v1::PARTIAL_WINDOW_DROP, 6},
                                                          {v1::PARTIAL_WINDOW_CARRY, 7}}) {
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
  spec.set_lr_scaling(v1::LR_SCALING_LINEAR);
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

namespace accumulus {
namespace {

// The fields of a spec's violations, for the adaptive_batch checks.
std::string ViolationsOf(const std::string& extra_yaml) {
  v1::JobSpec spec = Parse(kValid);  // micro 8 × accumulation 4 × 1 device: global 32
  spec.MergeFrom(Parse(extra_yaml));
  StatusOr<v1::JobSpec> result = NormalizeJobSpec(spec);
  return result.ok() ? "" : result.status().message();
}

TEST(NormalizeJobSpec, AdaptiveBatchTakesBoundsAroundTheStartingBatch) {
  EXPECT_EQ(ViolationsOf("adaptive_batch: {min_global_batch: 16, max_global_batch: 1024}\n"), "");
  const std::string half = ViolationsOf("adaptive_batch: {max_global_batch: 1024}\n");
  EXPECT_NE(half.find("adaptive_batch needs min_global_batch and max_global_batch"),
            std::string::npos)
      << half;
  const std::string inverted =
      ViolationsOf("adaptive_batch: {min_global_batch: 512, max_global_batch: 64}\n");
  EXPECT_NE(inverted.find("adaptive_batch.min_global_batch 512 is above max_global_batch 64"),
            std::string::npos)
      << inverted;
  const std::string outside =
      ViolationsOf("adaptive_batch: {min_global_batch: 64, max_global_batch: 1024}\n");
  EXPECT_NE(outside.find("the starting global_batch 32 lies outside adaptive_batch [64, 1024]"),
            std::string::npos)
      << outside;
  const std::string no_multiple =
      ViolationsOf("adaptive_batch: {min_global_batch: 17, max_global_batch: 23}\n");
  EXPECT_NE(no_multiple.find("holds no multiple of micro_batch × devices 8"), std::string::npos)
      << no_multiple;
  const std::string negative =
      ViolationsOf("adaptive_batch: {min_global_batch: -4, max_global_batch: 64}\n");
  EXPECT_NE(negative.find("adaptive_batch.min_global_batch"), std::string::npos) << negative;
}

TEST(NormalizeJobSpec, AdaptiveBatchOnOneDeviceNeedsTwoMicroBatchesAtLeast) {
  const std::string one = ViolationsOf(
      "accumulation_steps: 2\nadaptive_batch: {min_global_batch: 8, max_global_batch: 64}\n");
  EXPECT_NE(one.find("at least 2 × micro_batch (16)"), std::string::npos) << one;
}

TEST(NormalizeJobSpec, AdaptiveBatchKeepsMicroBatchAndDevicesFixed) {
  const std::string nominal = ViolationsOf(
      "accumulation_steps: 0\nnominal_batch: 64\n"
      "adaptive_batch: {min_global_batch: 16, max_global_batch: 128}\n");
  EXPECT_NE(nominal.find("does not combine with nominal_batch"), std::string::npos) << nominal;
}

TEST(NormalizeJobSpec, SqrtScalingNeedsABaseBatch) {
  v1::JobSpec spec = Parse(kValid);
  spec.MergeFrom(Parse("lr_scaling: sqrt\n"));
  EXPECT_EQ(spec.lr_scaling(), v1::LR_SCALING_SQRT);
  StatusOr<v1::JobSpec> result = NormalizeJobSpec(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("lr_scaling \"sqrt\" needs base_batch"),
            std::string::npos)
      << result.status().message();
  spec.set_base_batch(32);
  EXPECT_TRUE(NormalizeJobSpec(spec).ok());
}

}  // namespace
}  // namespace accumulus

namespace accumulus {
namespace {

// The specs examples/jobs/ offers to run as they are (README) read and
// validate as they are.
TEST(ExampleJobSpecs, EveryExampleReadsAndValidates) {
  const std::filesystem::path dir = std::filesystem::path(ACCUMULUS_SOURCE_DIR) / "examples/jobs";
  int examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    ++examples;
    StatusOr<v1::JobSpec> spec = LoadJobSpecFile(entry.path().string());
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    StatusOr<v1::JobSpec> normalized = NormalizeJobSpec(*spec);
    EXPECT_TRUE(normalized.ok()) << entry.path() << ": " << normalized.status().message();
  }
  EXPECT_GE(examples, 7);
}

}  // namespace
}  // namespace accumulus
