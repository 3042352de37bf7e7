// The names of the API's closed sets (proto enums) as people write them: in
// YAML specs, in the CLI's output and flags, in errors and in the docs. One
// list — the enum in the .proto — serves all of them.
//
// A value's name is its proto name without the enum's prefix, in lower case:
// OPTIMIZER_KIND_ADAMW is "adamw". Every enum of the API has value 0
// <PREFIX>UNSPECIFIED, which means "not given" and has no name of its own.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/generated_enum_reflection.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace accumulus {

// The name of `number` in `type`; "" for 0; for a number the enum does not
// name (a newer client's, or garbage), the number as digits.
std::string EnumValueName(const google::protobuf::EnumDescriptor& type, int number);

// The number named `name` (never 0: "unspecified" is no name), or nullopt.
std::optional<int> EnumValueByName(const google::protobuf::EnumDescriptor& type,
                                   std::string_view name);

// Whether `number` is a value of `type` other than 0.
bool IsNamedEnumValue(const google::protobuf::EnumDescriptor& type, int number);

// Every name of `type` in the order of the .proto: {"sgd", "adamw"}; and
// the same as one line: "sgd, adamw".
std::vector<std::string> EnumValueNameList(const google::protobuf::EnumDescriptor& type);
std::string EnumValueNames(const google::protobuf::EnumDescriptor& type);

template <typename Enum>
const google::protobuf::EnumDescriptor& EnumTypeOf() {
  return *google::protobuf::GetEnumDescriptor<Enum>();
}

template <typename Enum>
std::string NameOf(Enum value) {
  return EnumValueName(EnumTypeOf<Enum>(), static_cast<int>(value));
}

template <typename Enum>
std::optional<Enum> ValueNamed(std::string_view name) {
  const std::optional<int> number = EnumValueByName(EnumTypeOf<Enum>(), name);
  if (!number) return std::nullopt;
  return static_cast<Enum>(*number);
}

}  // namespace accumulus
