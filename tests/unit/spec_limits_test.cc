// Every numeric field's limit, every violation of a spec at once, and the
// bounds on its strings, labels and size.
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "common/job_spec.h"
#include "common/spec_yaml.h"
#include "tests/support/read_file.h"

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

v1::JobSpec Valid() {
  StatusOr<v1::JobSpec> spec = ParseJobSpecYaml(kValid, "test.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : v1::JobSpec();
}

// Sets the numeric field a limit names ("optimizer.lr", "devices.min") in
// `spec` through reflection, so that the table alone drives the test.
void SetField(v1::JobSpec* spec, const std::string& yaml_path, double value) {
  const std::string path = yaml_path == "devices.min" ? "min_devices" : yaml_path;
  google::protobuf::Message* message = spec;
  std::string rest = path;
  for (size_t dot; (dot = rest.find('.')) != std::string::npos; rest = rest.substr(dot + 1)) {
    const auto* field = message->GetDescriptor()->FindFieldByName(rest.substr(0, dot));
    ASSERT_NE(field, nullptr) << path;
    message = message->GetReflection()->MutableMessage(message, field);
  }
  const auto* field = message->GetDescriptor()->FindFieldByName(rest);
  ASSERT_NE(field, nullptr) << path;
  const auto* reflection = message->GetReflection();
  using Type = google::protobuf::FieldDescriptor;
  switch (field->cpp_type()) {
    case Type::CPPTYPE_INT32:
      reflection->SetInt32(message, field, static_cast<int32_t>(value));
      break;
    case Type::CPPTYPE_INT64:
      reflection->SetInt64(message, field, static_cast<int64_t>(value));
      break;
    case Type::CPPTYPE_DOUBLE:
      reflection->SetDouble(message, field, value);
      break;
    default:
      FAIL() << path << " is not a number field";
  }
}

std::vector<FieldViolation> ViolationsOf(const v1::JobSpec& spec) {
  StatusOr<v1::JobSpec> result = NormalizeJobSpec(spec);
  return result.ok() ? std::vector<FieldViolation>() : result.status().field_violations();
}

// The violation of `field` that is about its range, if any.
std::string RangeViolation(const std::vector<FieldViolation>& violations,
                           const std::string& field) {
  for (const FieldViolation& v : violations) {
    if (v.field != field) continue;
    for (const char* words :
         {"exceeds the limit", "must be", "must not be", "is not a number", "is required"}) {
      if (v.description.find(words) != std::string::npos) return v.description;
    }
  }
  return "";
}

TEST(SpecLimits, EveryNumericFieldIsBoundedOnBothSidesAndNamedWithItsValue) {
  ASSERT_GE(NumericLimits().size(), 35u);
  for (const NumericLimit& limit : NumericLimits()) {
    SCOPED_TRACE(limit.field);
    // Just past the top: refused naming the field, the value and the limit.
    const double above =
        limit.max_open
            ? limit.max
            : (limit.integer ? limit.max + 1
                             : std::nextafter(limit.max, std::numeric_limits<double>::infinity()));
    v1::JobSpec spec = Valid();
    SetField(&spec, limit.field, above);
    const std::string too_big = RangeViolation(ViolationsOf(spec), limit.field);
    ASSERT_FALSE(too_big.empty()) << "no violation for " << above;
    EXPECT_EQ(too_big.rfind(std::string(limit.field) + " ", 0), 0u) << too_big;
    if (limit.integer) {
      EXPECT_NE(too_big.find(std::to_string(static_cast<int64_t>(above))), std::string::npos)
          << too_big;
      EXPECT_NE(too_big.find("exceeds the limit"), std::string::npos) << too_big;
    }

    // At the top (or just under an open one): not refused for its range.
    const double top = limit.max_open ? std::nextafter(limit.max, 0.0) : limit.max;
    spec = Valid();
    SetField(&spec, limit.field, top);
    EXPECT_EQ(RangeViolation(ViolationsOf(spec), limit.field).find("exceeds"), std::string::npos);

    // Under the bottom (a 0 that takes a default is not under it).
    const double below = limit.min_open  ? limit.min
                         : limit.integer ? (limit.min == 1 ? -1 : limit.min - 1)
                                         : std::nextafter(limit.min, -1.0);
    spec = Valid();
    SetField(&spec, limit.field, below);
    EXPECT_FALSE(RangeViolation(ViolationsOf(spec), limit.field).empty())
        << "no violation for " << below;
    if (!limit.integer) {
      spec = Valid();
      SetField(&spec, limit.field, std::nan(""));
      EXPECT_NE(RangeViolation(ViolationsOf(spec), limit.field).find("nan is not a number"),
                std::string::npos);
    }
  }
}

TEST(SpecLimits, TheDocsListEveryLimitAsValidationHasIt) {
  const std::string docs =
      testing::ReadFile(std::string(ACCUMULUS_SOURCE_DIR) + "/docs/job-spec.md");
  ASSERT_FALSE(docs.empty());
  for (const NumericLimit& limit : NumericLimits()) {
    const std::string row = "| `" + std::string(limit.field) + "` | " + RangeText(limit) + " |";
    EXPECT_NE(docs.find(row), std::string::npos) << "docs/job-spec.md lacks " << row;
  }
}

TEST(SpecLimits, EveryViolationComesAtOnceInTheOrderOfTheSpec) {
  v1::JobSpec spec = Valid();
  spec.set_micro_batch(-8);
  spec.mutable_optimizer()->set_lr(-1);
  spec.mutable_optimizer()->set_kind(static_cast<v1::OptimizerKind>(9));
  spec.set_partial_window(static_cast<v1::PartialWindow>(9));
  spec.mutable_model()->set_kind(static_cast<v1::ModelKind>(9));
  StatusOr<v1::JobSpec> result = NormalizeJobSpec(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  std::vector<std::string> fields;
  std::string joined;
  for (const FieldViolation& v : result.status().field_violations()) {
    fields.push_back(v.field);
    joined += (joined.empty() ? "" : "; ") + v.description;
  }
  EXPECT_EQ(fields, (std::vector<std::string>{"micro_batch", "optimizer.lr", "model.kind",
                                              "optimizer.kind", "partial_window"}));
  EXPECT_EQ(result.status().message(), joined) << "the message is the violations' text";
  EXPECT_NE(joined.find("micro_batch -8 must not be negative"), std::string::npos) << joined;
  EXPECT_NE(joined.find("optimizer.lr -1 must be a positive number"), std::string::npos);
}

TEST(SpecLimits, AWrongFieldDoesNotAlsoFailTheChecksThatCombineIt) {
  v1::JobSpec spec = Valid();
  spec.mutable_model()->set_heads(-3);  // d_model % heads is not asked then
  const std::vector<FieldViolation> violations = ViolationsOf(spec);
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].description, "model.heads -3 must be positive");
}

TEST(SpecLimits, TheGlobalBatchIsBoundedWhateverItsFactors) {
  v1::JobSpec spec = Valid();
  spec.set_micro_batch(1 << 20);
  spec.set_accumulation_steps(1 << 16);
  spec.set_devices(1024);
  const std::vector<FieldViolation> violations = ViolationsOf(spec);
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].field, "global_batch");
  EXPECT_NE(violations[0].description.find("70368744177664"), std::string::npos)
      << violations[0].description;
}

TEST(SpecLimits, AnOversizedSpecIsRefusedByItsSizeAlone) {
  v1::JobSpec spec = Valid();
  spec.set_name(std::string(kMaxSpecBytes, 'a'));
  const std::vector<FieldViolation> violations = ViolationsOf(spec);
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].field, "spec");
  EXPECT_NE(violations[0].description.find("at most 65536"), std::string::npos);
}

TEST(SpecLimits, PathsAreBoundedPrintableText) {
  v1::JobSpec spec = Valid();
  spec.set_output(std::string(kMaxPathBytes + 1, 'p'));
  spec.mutable_checkpoint()->set_dir("ckpt\n/x");
  const std::vector<FieldViolation> violations = ViolationsOf(spec);
  ASSERT_EQ(violations.size(), 2u);
  EXPECT_EQ(violations[0].description, "output has 4097 bytes; at most 4096");
  EXPECT_EQ(violations[1].description,
            "checkpoint.dir: character 5 (U+000A) is a control character; a path is printable "
            "text");
}

TEST(SpecLimits, LabelsAreKubernetesStyleKeysWithPrintableValues) {
  v1::JobSpec spec = Valid();
  (*spec.mutable_labels())["team"] = "vision";
  (*spec.mutable_labels())["accumulus.dev/sweep"] = "lr-0.1";
  (*spec.mutable_labels())["a_b.c-9"] = "";
  EXPECT_TRUE(ViolationsOf(spec).empty());

  (*spec.mutable_labels())["-leading"] = "x";
  (*spec.mutable_labels())["Upper/name"] = "x";
  (*spec.mutable_labels())["note"] = "bell\a";
  (*spec.mutable_labels())[std::string(64, 'k')] = "x";
  const std::vector<FieldViolation> violations = ViolationsOf(spec);
  ASSERT_EQ(violations.size(), 4u);
  EXPECT_NE(violations[0].description.find("key \"-leading\" is not a label key"),
            std::string::npos);
  EXPECT_NE(violations[1].description.find("key \"Upper/name\""), std::string::npos);
  EXPECT_NE(violations[2].description.find("\"kkkk"), std::string::npos);
  EXPECT_EQ(violations[3].description,
            "labels.note: character 5 (U+0007) is a control character; a label value is "
            "printable text");

  v1::JobSpec many = Valid();
  for (int i = 0; i <= kMaxLabels; ++i) (*many.mutable_labels())["k" + std::to_string(i)] = "v";
  const std::vector<FieldViolation> too_many = ViolationsOf(many);
  ASSERT_EQ(too_many.size(), 1u);
  EXPECT_EQ(too_many[0].description, "labels has 33 entries; at most 32");
}

TEST(SpecLimits, LabelsComeFromTheYaml) {
  StatusOr<v1::JobSpec> spec = ParseJobSpecYaml(
      std::string(kValid) + "labels: {team: vision, sweep: \"3\", lr: 0.10}\n", "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->labels().at("team"), "vision");
  EXPECT_EQ(spec->labels().at("sweep"), "3");
  EXPECT_EQ(spec->labels().at("lr"), "0.10") << "a label's value is text, as written";
}

TEST(SpecLimits, DroppingEveryWindowIsRefused) {
  v1::JobSpec spec = Valid();  // 100 samples, global batch 32
  spec.set_partial_window(v1::PARTIAL_WINDOW_DROP);
  spec.set_accumulation_steps(16);  // 128 > 100
  const std::vector<FieldViolation> violations = ViolationsOf(spec);
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].description,
            "partial_window \"drop\" with global_batch 128 larger than data.samples 100: every "
            "window would be dropped");
}

TEST(SpecLimits, TheLargestJobIsCountedAtOnce) {
  v1::JobSpec spec = Valid();
  spec.mutable_data()->set_samples(1'000'000'000);
  spec.set_micro_batch(1);
  spec.set_accumulation_steps(1);
  spec.set_epochs(1'000'000);
  StatusOr<v1::JobSpec> normalized = NormalizeJobSpec(spec);
  ASSERT_TRUE(normalized.ok()) << normalized.status().ToString();
  EXPECT_EQ(TotalSteps(*normalized, *ResolveBatchPlan(*normalized)), 1'000'000'000'000'000);
}

}  // namespace
}  // namespace accumulus
