#include "common/spec_yaml.h"

#include <google/protobuf/util/json_util.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

namespace accumulus {
namespace {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

bool LooksNumeric(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// YAML → JSON, so protobuf's JSON parser does the typing and names unknown
// fields. A plain (unquoted) scalar that reads as a number or a boolean stays
// one; a quoted scalar is always a string.
void ToJson(const YAML::Node& node, std::string* out) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      *out += "null";
      return;
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      const bool plain = node.Tag() != "!";
      if (plain && (LooksNumeric(s) || s == "true" || s == "false")) {
        *out += s;
      } else {
        *out += JsonString(s);
      }
      return;
    }
    case YAML::NodeType::Sequence: {
      *out += "[";
      for (size_t i = 0; i < node.size(); ++i) {
        if (i) *out += ",";
        ToJson(node[i], out);
      }
      *out += "]";
      return;
    }
    case YAML::NodeType::Map: {
      *out += "{";
      bool first = true;
      for (const auto& entry : node) {
        if (!first) *out += ",";
        first = false;
        *out += JsonString(entry.first.as<std::string>()) + ":";
        ToJson(entry.second, out);
      }
      *out += "}";
      return;
    }
    case YAML::NodeType::Undefined:
      *out += "null";
      return;
  }
}

}  // namespace

StatusOr<v1::JobSpec> ParseJobSpecYaml(const std::string& yaml, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(source + ": line " + std::to_string(e.mark.line + 1) +
                                   ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  if (!root.IsMap()) {
    return Status::InvalidArgument(source + ": a job spec must be a YAML mapping of fields");
  }
  // `micro_batch: auto` is the auto_micro_batch flag.
  if (root["micro_batch"] && root["micro_batch"].IsScalar() &&
      root["micro_batch"].Scalar() == "auto") {
    root.remove("micro_batch");
    root["auto_micro_batch"] = true;
  }
  // `devices: {min: A, max: B}`: an elastic device count.
  if (root["devices"] && root["devices"].IsMap()) {
    const YAML::Node range = root["devices"];
    for (const auto& key : range) {
      const std::string name = key.first.as<std::string>();
      if (name != "min" && name != "max") {
        return Status::InvalidArgument(source + ": devices." + name +
                                       " is not a field (devices: {min, max})");
      }
    }
    if (!range["min"] || !range["max"]) {
      return Status::InvalidArgument(source + ": devices needs both min and max");
    }
    const YAML::Node min = range["min"];
    const YAML::Node max = range["max"];
    root.remove("devices");
    root["devices"] = max;
    root["min_devices"] = min;
  }
  std::string json;
  ToJson(root, &json);
  v1::JobSpec spec;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto parsed = google::protobuf::util::JsonStringToMessage(json, &spec, options);
  if (!parsed.ok()) {
    return Status::InvalidArgument(source + ": " + std::string(parsed.message()));
  }
  return spec;
}

StatusOr<v1::JobSpec> LoadJobSpecFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read job spec " + path);
  std::stringstream text;
  text << in.rdbuf();
  return ParseJobSpecYaml(text.str(), path);
}

}  // namespace accumulus
