#include "common/spec_yaml.h"

#include <google/protobuf/util/json_util.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "common/enum_names.h"
#include "common/user_text.h"

namespace accumulus {
namespace {

// What one spec may make the reader do: nesting, and values after alias
// expansion (a few lines of anchors and aliases can otherwise stand for
// billions of values).
constexpr int kMaxDepth = 32;
constexpr size_t kMaxValues = 100000;

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A number as JSON writes one: -?digits[.digits][e[+-]digits]. Anything
// else strtod would take (hex, "inf", "nan") is not a number of a spec.
bool IsJsonNumber(const std::string& s) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t from = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i > from;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (!digits()) return false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == s.size();
}

// YAML's and C's words for infinity and not-a-number: .inf, -.Inf, .nan,
// inf, NaN, infinity.
bool IsNonFiniteWord(std::string s) {
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.erase(0, 1);
  if (!s.empty() && s[0] == '.') s.erase(0, 1);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "inf" || s == "infinity" || s == "nan";
}

// YAML → JSON, so protobuf's JSON parser does the typing and names unknown
// fields. A plain (unquoted) scalar that reads as a number or a boolean stays
// one; a quoted scalar is always a string; a closed set's value is its
// lowercase name (enum_names.h), whatever the quoting. What JSON cannot say,
// or the reader must not do, is refused here in the spec's terms: the file,
// the line, the field's path and the value as written.
class YamlToJson {
 public:
  explicit YamlToJson(const std::string& source) : source_(source) {}

  // `type`: the message whose fields a mapping at `node` names (null where
  // no message is known: protobuf's parser names what is wrong there).
  Status Convert(const YAML::Node& node, const std::string& path, int depth,
                 const google::protobuf::Descriptor* type, std::string* out) {
    if (++values_ > kMaxValues) {
      return Error(node, "the spec stands for more than " + std::to_string(kMaxValues) +
                             " values (YAML aliases expanding?)");
    }
    if (depth > kMaxDepth) {
      return Error(node,
                   Field(path) + " is nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        *out += "null";
        return Status::Ok();
      case YAML::NodeType::Scalar:
        return Scalar(node, path, out);
      case YAML::NodeType::Sequence: {
        *out += "[";
        for (size_t i = 0; i < node.size(); ++i) {
          if (i) *out += ",";
          const std::string item = path + "[" + std::to_string(i + 1) + "]";
          if (Status s = Convert(node[i], item, depth + 1, type, out); !s.ok()) return s;
        }
        *out += "]";
        return Status::Ok();
      }
      case YAML::NodeType::Map:
        return Map(node, path, depth, type, out);
    }
    return Status::Ok();
  }

 private:
  static std::string Field(const std::string& path) { return path.empty() ? "the spec" : path; }

  Status Error(const YAML::Node& node, const std::string& what) const {
    const YAML::Mark mark = node.IsDefined() ? node.Mark() : YAML::Mark::null_mark();
    if (mark.is_null()) return Status::InvalidArgument(source_ + ": " + what);
    return Status::InvalidArgument(source_ + ": line " + std::to_string(mark.line + 1) + ": " +
                                   what);
  }

  Status Scalar(const YAML::Node& node, const std::string& path, std::string* out) {
    const std::string& s = node.Scalar();
    // Quoted, or a label's value (labels are text: `sweep: 3` is "3").
    if (node.Tag() == "!" || path.rfind("labels.", 0) == 0) {
      *out += JsonString(s);
      return Status::Ok();
    }
    if (IsNonFiniteWord(s)) {
      return Error(node, Field(path) + " " + s + " is not a finite number");
    }
    if (IsJsonNumber(s)) {
      if (!std::isfinite(std::strtod(s.c_str(), nullptr))) {
        return Error(node, Field(path) + " " + s + " is out of range");
      }
      *out += s;
    } else if (s == "true" || s == "false") {
      *out += s;
    } else {
      *out += JsonString(s);
    }
    return Status::Ok();
  }

  // A closed set's value: one of its names, as the JSON parser spells it.
  Status EnumValue(const YAML::Node& node, const std::string& path,
                   const google::protobuf::EnumDescriptor& type, std::string* out) {
    if (node.IsNull()) {
      *out += "null";
      return Status::Ok();
    }
    const std::optional<int> number =
        node.IsScalar() ? EnumValueByName(type, node.Scalar()) : std::nullopt;
    if (!number) {
      const std::string value = node.IsScalar() ? QuotedForError(node.Scalar()) : "(not a name)";
      return Error(node, "unknown " + path + " " + value + "; one of " + EnumValueNames(type));
    }
    *out += JsonString(type.FindValueByNumber(*number)->name());
    return Status::Ok();
  }

  Status Map(const YAML::Node& node, const std::string& path, int depth,
             const google::protobuf::Descriptor* type, std::string* out) {
    *out += "{";
    std::map<std::string, int> lines;  // key → line it first appeared on
    for (const auto& entry : node) {
      if (!entry.first.IsScalar()) {
        return Error(entry.first,
                     "a key of " + Field(path) + " is a list or a mapping; keys are field names");
      }
      const std::string key = entry.first.Scalar();
      const std::string field = path.empty() ? key : path + "." + key;
      const int line = entry.first.Mark().is_null() ? 0 : entry.first.Mark().line + 1;
      if (const auto [it, added] = lines.emplace(key, line); !added) {
        return Error(
            entry.first,
            field + " is given twice" +
                (it->second > 0 ? " (first on line " + std::to_string(it->second) + ")" : ""));
      }
      if (lines.size() > 1) *out += ",";
      *out += JsonString(key) + ":";
      const google::protobuf::FieldDescriptor* f = type ? type->FindFieldByName(key) : nullptr;
      Status s;
      if (f != nullptr && f->enum_type() != nullptr) {
        s = EnumValue(entry.second, field, *f->enum_type(), out);
      } else {
        const bool message = f != nullptr && f->message_type() != nullptr && !f->is_map();
        s = Convert(entry.second, field, depth + 1, message ? f->message_type() : nullptr, out);
      }
      if (!s.ok()) return s;
    }
    *out += "}";
    return Status::Ok();
  }

  const std::string& source_;
  size_t values_ = 0;
};

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
      if (!key.first.IsScalar()) {
        return Status::InvalidArgument(source +
                                       ": a key of devices is a list or a mapping "
                                       "(devices: {min, max})");
      }
      const std::string name = key.first.Scalar();
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
  if (Status s = YamlToJson(source).Convert(root, "", 0, v1::JobSpec::descriptor(), &json);
      !s.ok()) {
    return s;
  }
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
