#include "common/enum_names.h"

#include <cctype>

namespace accumulus {
namespace {

// "OPTIMIZER_KIND_" for OptimizerKind: its value 0's name less "UNSPECIFIED"
// (tests/unit/enum_names_test.cc holds every enum of the API to that form).
std::string_view PrefixOf(const google::protobuf::EnumDescriptor& type) {
  constexpr std::string_view kUnspecified = "UNSPECIFIED";
  const google::protobuf::EnumValueDescriptor* zero = type.FindValueByNumber(0);
  if (zero == nullptr) return {};
  std::string_view name = zero->name();
  if (name.size() < kUnspecified.size() ||
      name.substr(name.size() - kUnspecified.size()) != kUnspecified) {
    return {};
  }
  return name.substr(0, name.size() - kUnspecified.size());
}

std::string Lowered(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string EnumValueName(const google::protobuf::EnumDescriptor& type, int number) {
  if (number == 0) return "";
  const google::protobuf::EnumValueDescriptor* value = type.FindValueByNumber(number);
  if (value == nullptr) return std::to_string(number);
  std::string_view name = value->name();
  const std::string_view prefix = PrefixOf(type);
  if (name.substr(0, prefix.size()) == prefix) name.remove_prefix(prefix.size());
  return Lowered(name);
}

std::optional<int> EnumValueByName(const google::protobuf::EnumDescriptor& type,
                                   std::string_view name) {
  for (int i = 0; i < type.value_count(); ++i) {
    const int number = type.value(i)->number();
    if (number != 0 && EnumValueName(type, number) == name) return number;
  }
  return std::nullopt;
}

bool IsNamedEnumValue(const google::protobuf::EnumDescriptor& type, int number) {
  return number != 0 && type.FindValueByNumber(number) != nullptr;
}

std::vector<std::string> EnumValueNameList(const google::protobuf::EnumDescriptor& type) {
  std::vector<std::string> names;
  for (int i = 0; i < type.value_count(); ++i) {
    if (type.value(i)->number() != 0) names.push_back(EnumValueName(type, type.value(i)->number()));
  }
  return names;
}

std::string EnumValueNames(const google::protobuf::EnumDescriptor& type) {
  std::string names;
  for (const std::string& name : EnumValueNameList(type)) {
    names += (names.empty() ? "" : ", ") + name;
  }
  return names;
}

}  // namespace accumulus
