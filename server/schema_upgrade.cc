#include "server/schema_upgrade.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/unknown_field_set.h>

#include <optional>
#include <string>

#include "accumulus/v1/job.pb.h"
#include "common/enum_names.h"

namespace accumulus::server {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

// Attempt.preempted (version 1's field 5, a bool): true is failure class
// PREEMPTED now.
constexpr int kAttemptPreemptedField = 5;

void UpgradeFields(google::protobuf::Message* message) {
  const google::protobuf::Descriptor* type = message->GetDescriptor();
  const google::protobuf::Reflection* reflection = message->GetReflection();
  UnknownFieldSet* unknown = reflection->MutableUnknownFields(message);
  // Backwards, so that deleting one keeps the indices before it.
  for (int i = unknown->field_count() - 1; i >= 0; --i) {
    const UnknownField& old = unknown->field(i);
    if (type == v1::Attempt::descriptor() && old.number() == kAttemptPreemptedField &&
        old.type() == UnknownField::TYPE_VARINT) {
      if (old.varint() != 0) {
        static_cast<v1::Attempt*>(message)->set_failure_class(v1::FAILURE_CLASS_PREEMPTED);
      }
      unknown->DeleteSubrange(i, 1);
      continue;
    }
    const FieldDescriptor* field = type->FindFieldByNumber(old.number());
    if (field == nullptr || field->enum_type() == nullptr || field->is_repeated() ||
        old.type() != UnknownField::TYPE_LENGTH_DELIMITED) {
      continue;
    }
    const std::optional<int> number = EnumValueByName(*field->enum_type(), old.length_delimited());
    reflection->SetEnumValue(message, field, number.value_or(0));
    unknown->DeleteSubrange(i, 1);
  }
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* field = type->field(i);
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || field->is_map()) continue;
    if (field->is_repeated()) {
      for (int j = 0; j < reflection->FieldSize(*message, field); ++j) {
        UpgradeFields(reflection->MutableRepeatedMessage(message, field, j));
      }
    } else if (reflection->HasField(*message, field)) {
      UpgradeFields(reflection->MutableMessage(message, field));
    }
  }
}

}  // namespace

void UpgradeClosedSetsFromStrings(google::protobuf::Message* message) { UpgradeFields(message); }

}  // namespace accumulus::server
