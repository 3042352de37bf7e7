// The API's closed sets: one list (the proto enum) names their values in
// YAML, in errors, in the CLI and in the docs.
#include "common/enum_names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "accumulus/v1/controller.pb.h"
#include "accumulus/v1/trainer.pb.h"
#include "accumulus/v1/worker.pb.h"
#include "common/spec_yaml.h"
#include "tests/support/read_file.h"

namespace accumulus {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;

std::vector<const EnumDescriptor*> EnumsOf(const Descriptor& message) {
  std::vector<const EnumDescriptor*> out;
  for (int i = 0; i < message.enum_type_count(); ++i) out.push_back(message.enum_type(i));
  for (int i = 0; i < message.nested_type_count(); ++i) {
    for (const EnumDescriptor* e : EnumsOf(*message.nested_type(i))) out.push_back(e);
  }
  return out;
}

std::vector<const EnumDescriptor*> ApiEnums() {
  std::vector<const EnumDescriptor*> out;
  for (const FileDescriptor* file :
       {v1::JobSpec::descriptor()->file(), v1::WorkerMessage::descriptor()->file(),
        v1::SubmitJobRequest::descriptor()->file(), v1::TrainerTask::descriptor()->file()}) {
    for (int i = 0; i < file->enum_type_count(); ++i) out.push_back(file->enum_type(i));
    for (int i = 0; i < file->message_type_count(); ++i) {
      for (const EnumDescriptor* e : EnumsOf(*file->message_type(i))) out.push_back(e);
    }
  }
  return out;
}

// An enum field a spec can hold, by its path as YAML and errors spell it.
struct SpecEnumField {
  std::string path;
  const FieldDescriptor* field;
};

void CollectEnumFields(const Descriptor& message, const std::string& prefix,
                       std::vector<SpecEnumField>* out) {
  for (int i = 0; i < message.field_count(); ++i) {
    const FieldDescriptor* f = message.field(i);
    const std::string path = prefix.empty() ? f->name() : prefix + "." + f->name();
    if (f->enum_type() != nullptr) out->push_back({path, f});
    if (f->message_type() != nullptr && !f->is_map() && !f->is_repeated()) {
      CollectEnumFields(*f->message_type(), path, out);
    }
  }
}

std::vector<SpecEnumField> SpecEnumFields() {
  std::vector<SpecEnumField> out;
  CollectEnumFields(*v1::JobSpec::descriptor(), "", &out);
  return out;
}

// "optimizer.kind", "adamw" → "optimizer: {kind: adamw}".
std::string YamlSetting(const std::string& path, const std::string& value) {
  const size_t dot = path.find('.');
  if (dot == std::string::npos) return path + ": " + value;
  return path.substr(0, dot) + ": {" + YamlSetting(path.substr(dot + 1), value) + "}";
}

// The value of the enum at `path` in `spec`.
int EnumAt(const google::protobuf::Message& message, const std::string& path) {
  const size_t dot = path.find('.');
  const Descriptor* type = message.GetDescriptor();
  const google::protobuf::Reflection* reflection = message.GetReflection();
  if (dot == std::string::npos) {
    return reflection->GetEnumValue(message, type->FindFieldByName(path));
  }
  return EnumAt(reflection->GetMessage(message, type->FindFieldByName(path.substr(0, dot))),
                path.substr(dot + 1));
}

TEST(EnumNames, EveryEnumOfTheApiHasAnUnspecifiedZeroAndOnePrefix) {
  const std::vector<const EnumDescriptor*> enums = ApiEnums();
  ASSERT_GE(enums.size(), 18u);
  for (const EnumDescriptor* e : enums) {
    const std::string zero = e->FindValueByNumber(0) ? e->FindValueByNumber(0)->name() : "";
    ASSERT_GT(zero.size(), std::string("UNSPECIFIED").size()) << e->full_name();
    ASSERT_EQ(zero.substr(zero.size() - 11), "UNSPECIFIED") << e->full_name();
    const std::string prefix = zero.substr(0, zero.size() - 11);
    for (int i = 0; i < e->value_count(); ++i) {
      EXPECT_EQ(e->value(i)->name().rfind(prefix, 0), 0u) << e->value(i)->full_name();
      if (e->value(i)->number() != 0) {
        EXPECT_EQ(EnumValueByName(*e, EnumValueName(*e, e->value(i)->number())),
                  e->value(i)->number())
            << e->value(i)->full_name() << ": its name reads back as itself";
      }
    }
  }
}

TEST(EnumNames, NamesAreLowercaseWithoutThePrefix) {
  EXPECT_EQ(NameOf(v1::OPTIMIZER_KIND_ADAMW), "adamw");
  EXPECT_EQ(NameOf(v1::NORMALIZATION_PER_MICROBATCH_MEAN), "per_microbatch_mean");
  EXPECT_EQ(NameOf(v1::FAILURE_CLASS_OUT_OF_MEMORY), "out_of_memory");
  EXPECT_EQ(NameOf(v1::OPTIMIZER_KIND_UNSPECIFIED), "") << "0 is not given, not a name";
  EXPECT_EQ(NameOf(static_cast<v1::OptimizerKind>(42)), "42");
  EXPECT_EQ(ValueNamed<v1::Precision>("bf16"), v1::PRECISION_BF16);
  EXPECT_EQ(ValueNamed<v1::Precision>("unspecified"), std::nullopt);
  EXPECT_EQ(ValueNamed<v1::Precision>("BF16"), std::nullopt) << "names are lowercase";
  EXPECT_EQ(EnumValueNames(EnumTypeOf<v1::OptimizerKind>()), "sgd, adamw");
}

TEST(EnumNames, EveryNameOfEveryClosedSetOfASpecReadsFromYaml) {
  const std::vector<SpecEnumField> fields = SpecEnumFields();
  ASSERT_GE(fields.size(), 14u);
  for (const SpecEnumField& f : fields) {
    const EnumDescriptor& type = *f.field->enum_type();
    for (int i = 0; i < type.value_count(); ++i) {
      const int number = type.value(i)->number();
      if (number == 0) continue;
      const std::string yaml = YamlSetting(f.path, EnumValueName(type, number));
      StatusOr<v1::JobSpec> spec = ParseJobSpecYaml(yaml, "spec.yaml");
      ASSERT_TRUE(spec.ok()) << yaml << ": " << spec.status().ToString();
      EXPECT_EQ(EnumAt(*spec, f.path), number) << yaml;
      // Quoted, the same name.
      spec = ParseJobSpecYaml(YamlSetting(f.path, "\"" + EnumValueName(type, number) + "\""),
                              "spec.yaml");
      ASSERT_TRUE(spec.ok()) << spec.status().ToString();
      EXPECT_EQ(EnumAt(*spec, f.path), number);
    }
  }
}

TEST(EnumNames, AnUnknownNameInYamlNamesTheFieldTheLineAndTheNames) {
  for (const SpecEnumField& f : SpecEnumFields()) {
    const std::string yaml = "name: x\n" + YamlSetting(f.path, "nonsense");
    StatusOr<v1::JobSpec> spec = ParseJobSpecYaml(yaml, "spec.yaml");
    ASSERT_FALSE(spec.ok()) << yaml;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(spec.status().message(), "spec.yaml: line 2: unknown " + f.path +
                                           " \"nonsense\"; one of " +
                                           EnumValueNames(*f.field->enum_type()));
  }
}

TEST(EnumNames, YamlTakesNamesNotNumbersOrUnspecified) {
  for (const char* value : {"1", "0", "unspecified", "OPTIMIZER_KIND_ADAMW", "Adamw", "[sgd]"}) {
    StatusOr<v1::JobSpec> spec =
        ParseJobSpecYaml(std::string("optimizer: {kind: ") + value + "}", "spec.yaml");
    ASSERT_FALSE(spec.ok()) << value;
    EXPECT_NE(spec.status().message().find("unknown optimizer.kind"), std::string::npos)
        << spec.status().message();
    EXPECT_NE(spec.status().message().find("one of sgd, adamw"), std::string::npos);
  }
}

TEST(EnumNames, AHugeOrUnprintableNameIsDescribedNotQuoted) {
  StatusOr<v1::JobSpec> spec =
      ParseJobSpecYaml("optimizer: {kind: " + std::string(1000, 'x') + "}", "spec.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "spec.yaml: line 1: unknown optimizer.kind (a 1000-byte string); one of sgd, adamw");
  spec = ParseJobSpecYaml("optimizer: {kind: \"sgd\\e[2J\"}", "spec.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message().find('\x1b'), std::string::npos) << spec.status().message();
}

TEST(EnumNames, TheDocsListEveryClosedSetOfASpecAsTheEnumHasIt) {
  const std::string docs =
      testing::ReadFile(std::string(ACCUMULUS_SOURCE_DIR) + "/docs/job-spec.md");
  ASSERT_FALSE(docs.empty());
  for (const SpecEnumField& f : SpecEnumFields()) {
    const std::string row = "| `" + f.path + "` | " + EnumValueNames(*f.field->enum_type()) + " |";
    EXPECT_NE(docs.find(row), std::string::npos) << "docs/job-spec.md lacks " << row;
  }
}

}  // namespace
}  // namespace accumulus
