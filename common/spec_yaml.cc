#include "common/spec_yaml.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "common/enum_names.h"
#include "common/small_file.h"
#include "common/user_text.h"
#include "common/yaml_document.h"

namespace accumulus {
namespace {

namespace pb = google::protobuf;

// What one spec may make the reader do: nesting, and values visited after
// alias and merge-key expansion (a few lines of anchors and aliases can
// otherwise stand for billions of values).
constexpr int kMaxDepth = 32;
constexpr size_t kMaxValues = 100000;

// A number as JSON writes one: -?digits[.digits][e[+-]digits]. Anything
// else strtod would take (hex, "inf", "nan", ".5", "+1") is not a number of
// a spec.
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

// A whole number as a sign and a magnitude, so that every integer type's
// range is checked without overflow: -2^63 and 2^64 - 1 both fit.
struct WholeNumber {
  bool negative = false;
  uint64_t magnitude = 0;
};

// The range of an integer field, and whether `n` is in it.
struct IntegerRange {
  uint64_t most_negative;  // magnitude of the minimum
  uint64_t most_positive;
  bool Holds(const WholeNumber& n) const {
    return n.negative ? n.magnitude <= most_negative : n.magnitude <= most_positive;
  }
  std::string Text() const {
    return (most_negative > 0 ? "-" + std::to_string(most_negative) : "0") + " to " +
           std::to_string(most_positive);
  }
};

IntegerRange RangeOf(pb::FieldDescriptor::CppType type) {
  switch (type) {
    case pb::FieldDescriptor::CPPTYPE_INT32:
      return {uint64_t{1} << 31, (uint64_t{1} << 31) - 1};
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      return {0, std::numeric_limits<uint32_t>::max()};
    case pb::FieldDescriptor::CPPTYPE_INT64:
      return {uint64_t{1} << 63, (uint64_t{1} << 63) - 1};
    default:
      return {0, std::numeric_limits<uint64_t>::max()};
  }
}

// A field's name in a path: as written when it could be a field name, else
// quoted for the error (a key may hold anything, escape sequences too).
std::string KeyForError(const std::string& key) {
  const bool name = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  return name ? key : QuotedForError(key);
}

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? KeyForError(key) : path + "." + KeyForError(key);
}

// Levenshtein distance, for suggesting the field a misspelt key meant.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// A key lowercased without underscores: globalBatch and global_batch meet.
std::string Folded(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// The field `key` most likely meant: the same name in another case or
// spelling (globalBatch), or one within two edits (micro_bach); null when
// none is that close.
const pb::FieldDescriptor* ClosestField(const pb::Descriptor& type, const std::string& key) {
  const pb::FieldDescriptor* best = nullptr;
  size_t best_distance = 3;
  for (int i = 0; i < type.field_count(); ++i) {
    const pb::FieldDescriptor* f = type.field(i);
    const size_t distance = Folded(f->name()) == Folded(key) ? 0 : EditDistance(f->name(), key);
    if (distance < best_distance) {
      best = f;
      best_distance = distance;
    }
  }
  return best;
}

std::string FieldNames(const pb::Descriptor& type) {
  std::vector<std::string> names;
  for (int i = 0; i < type.field_count(); ++i) names.push_back(type.field(i)->name());
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

const char* KindOf(const YAML::Node& node) {
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "a single value";
}

// YAML → JobSpec, led by the message's descriptor: every key must name a
// field, and every value must be of the field's type. What is wrong is
// refused in the spec's terms — the file, the line, the field's path
// (list items counted from 0, as the controller counts them) and the value
// as written — the words clients/python/src/accumulus/spec.py uses too. A
// plain (unquoted) value and a quoted one read the same, except that only a
// plain true or false is a boolean; text fields take any value as written
// (`name: 123` is "123"); a closed set's value is one of its lowercase
// names (enum_names.h). YAML merge keys (`<<: *defaults`) fill in the keys a
// mapping does not give itself.
class SpecReader {
 public:
  explicit SpecReader(const std::string& source) : source_(source) {}

  Status Message(const YAML::Node& node, const std::string& path, int depth, pb::Message* out) {
    if (Status s = Visit(node, path, depth); !s.ok()) return s;
    if (!node.IsMap()) {
      return Error(node, Field(path) + " must be a mapping of fields, not " + KindOf(node));
    }
    std::vector<Entry> entries;
    if (Status s = Entries(node, path, depth, &entries); !s.ok()) return s;
    const pb::Descriptor& type = *out->GetDescriptor();
    for (const Entry& entry : entries) {
      const std::string& key = entry.key.Scalar();
      const std::string field = Join(path, key);
      if (&type == v1::JobSpec::descriptor()) {
        // `micro_batch: auto` is the auto_micro_batch flag.
        if (key == "micro_batch" && entry.value.IsScalar() && entry.value.Scalar() == "auto") {
          out->GetReflection()->SetBool(out, type.FindFieldByName("auto_micro_batch"), true);
          continue;
        }
        // `devices: {min: A, max: B}`: an elastic device count.
        if (key == "devices" && entry.value.IsMap()) {
          if (Status s = DeviceRange(entry.value, depth + 1, out); !s.ok()) return s;
          continue;
        }
      }
      const pb::FieldDescriptor* f = type.FindFieldByName(key);
      if (f == nullptr) {
        const pb::FieldDescriptor* meant = ClosestField(type, key);
        return Error(entry.key, field + " is not a field" +
                                    (meant != nullptr ? "; did you mean " + meant->name() + "?"
                                                      : " (one of " + FieldNames(type) + ")"));
      }
      if (Status s = Field(entry.value, field, depth + 1, *f, out); !s.ok()) return s;
    }
    return Status::Ok();
  }

 private:
  struct Entry {
    YAML::Node key;
    YAML::Node value;
  };

  static std::string Field(const std::string& path) { return path.empty() ? "the spec" : path; }

  Status Error(const YAML::Node& node, const std::string& what) const {
    const YAML::Mark mark = node.IsDefined() ? node.Mark() : YAML::Mark::null_mark();
    if (mark.is_null()) return Status::InvalidArgument(source_ + ": " + what);
    return Status::InvalidArgument(source_ + ": line " + std::to_string(mark.line + 1) + ": " +
                                   what);
  }

  // Counts one value against the bounds.
  Status Visit(const YAML::Node& node, const std::string& path, int depth) {
    if (++values_ > kMaxValues) {
      return Error(node, "the spec stands for more than " + std::to_string(kMaxValues) +
                             " values (YAML aliases expanding?)");
    }
    if (depth > kMaxDepth) {
      return Error(node,
                   Field(path) + " is nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    return Status::Ok();
  }

  // A mapping's entries: its own keys in order (each once), then those its
  // merge keys bring that it does not give itself, the first merged mapping
  // first.
  Status Entries(const YAML::Node& map, const std::string& path, int depth,
                 std::vector<Entry>* out) {
    std::map<std::string, int> lines;  // key → line it first appeared on (0: merged)
    std::vector<YAML::Node> merges;
    for (const auto& entry : map) {
      if (!entry.first.IsScalar()) {
        return Error(entry.first,
                     "a key of " + Field(path) + " is a list or a mapping; keys are field names");
      }
      const std::string& key = entry.first.Scalar();
      if (key == "<<" && entry.first.Tag() != "!") {
        merges.push_back(entry.second);
        continue;
      }
      const int line = entry.first.Mark().is_null() ? 0 : entry.first.Mark().line + 1;
      if (const auto [it, added] = lines.emplace(key, line); !added) {
        return Error(
            entry.first,
            Join(path, key) + " is given twice" +
                (it->second > 0 ? " (first on line " + std::to_string(it->second) + ")" : ""));
      }
      out->push_back({entry.first, entry.second});
    }
    for (const YAML::Node& merge : merges) {
      std::vector<YAML::Node> sources;
      if (merge.IsSequence()) {
        for (const YAML::Node& source : merge) sources.push_back(source);
      } else {
        sources.push_back(merge);
      }
      for (const YAML::Node& source : sources) {
        if (Status s = Visit(source, path, depth + 1); !s.ok()) return s;
        if (!source.IsMap()) {
          return Error(source, "<< in " + Field(path) + " takes a mapping or a list of mappings");
        }
        std::vector<Entry> merged;
        if (Status s = Entries(source, path, depth + 1, &merged); !s.ok()) return s;
        for (const Entry& entry : merged) {
          if (lines.emplace(entry.key.Scalar(), 0).second) out->push_back(entry);
        }
      }
    }
    return Status::Ok();
  }

  // A field's value: nothing (null), a mapping for a map field, a list for
  // a repeated one, else one value.
  Status Field(const YAML::Node& node, const std::string& path, int depth,
               const pb::FieldDescriptor& f, pb::Message* out) {
    if (Status s = Visit(node, path, depth); !s.ok()) return s;
    if (node.IsNull()) return Status::Ok();  // not given
    if (f.is_map()) {
      if (!node.IsMap()) return Error(node, path + " must be a mapping, not " + KindOf(node));
      std::vector<Entry> entries;
      if (Status s = Entries(node, path, depth, &entries); !s.ok()) return s;
      const pb::Descriptor& entry_type = *f.message_type();
      for (const Entry& entry : entries) {
        pb::Message* pair = out->GetReflection()->AddMessage(out, &f);
        if (Status s = Value(entry.key, path, *entry_type.map_key(), pair); !s.ok()) return s;
        const std::string item = Join(path, entry.key.Scalar());
        if (Status s = Visit(entry.value, item, depth + 1); !s.ok()) return s;
        if (entry.value.IsNull()) return Error(entry.key, item + " has no value");
        if (Status s = Value(entry.value, item, *entry_type.map_value(), pair); !s.ok()) return s;
      }
      return Status::Ok();
    }
    if (f.is_repeated()) {
      if (!node.IsSequence()) return Error(node, path + " must be a list, not " + KindOf(node));
      for (size_t i = 0; i < node.size(); ++i) {
        const std::string item = path + "[" + std::to_string(i) + "]";
        if (Status s = Visit(node[i], item, depth + 1); !s.ok()) return s;
        if (node[i].IsNull()) return Error(node[i], item + " has no value");
        if (f.cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
          Status s = Message(node[i], item, depth + 1, out->GetReflection()->AddMessage(out, &f));
          if (!s.ok()) return s;
        } else if (Status s = Value(node[i], item, f, out); !s.ok()) {
          return s;
        }
      }
      return Status::Ok();
    }
    if (f.cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      return Message(node, path, depth, out->GetReflection()->MutableMessage(out, &f));
    }
    return Value(node, path, f, out);
  }

  // One value of a field that is not a message: set, or added to the
  // repeated field.
  Status Value(const YAML::Node& node, const std::string& path, const pb::FieldDescriptor& f,
               pb::Message* out) {
    if (!node.IsScalar()) {
      if (f.cpp_type() == pb::FieldDescriptor::CPPTYPE_ENUM) {
        return Error(node, "unknown " + path + " (" + KindOf(node) + "); one of " +
                               EnumValueNames(*f.enum_type()));
      }
      return Error(node, path + " must be a single value, not " + KindOf(node));
    }
    const pb::Reflection& r = *out->GetReflection();
    const std::string& text = node.Scalar();
    const bool repeated = f.is_repeated();
    switch (f.cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_STRING:
        repeated ? r.AddString(out, &f, text) : r.SetString(out, &f, text);
        return Status::Ok();
      case pb::FieldDescriptor::CPPTYPE_ENUM: {
        const std::optional<int> number = EnumValueByName(*f.enum_type(), text);
        if (!number) {
          return Error(node, "unknown " + path + " " + QuotedForError(text) + "; one of " +
                                 EnumValueNames(*f.enum_type()));
        }
        repeated ? r.AddEnumValue(out, &f, *number) : r.SetEnumValue(out, &f, *number);
        return Status::Ok();
      }
      case pb::FieldDescriptor::CPPTYPE_BOOL: {
        const bool plain = node.Tag() != "!";
        if (!plain || (text != "true" && text != "false")) {
          return Error(node, path + " " + QuotedForError(text) + " is not true or false");
        }
        repeated ? r.AddBool(out, &f, text == "true") : r.SetBool(out, &f, text == "true");
        return Status::Ok();
      }
      case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      case pb::FieldDescriptor::CPPTYPE_FLOAT: {
        if (Status s = Number(node, path); !s.ok()) return s;
        const double value = std::strtod(text.c_str(), nullptr);
        const bool is_float = f.cpp_type() == pb::FieldDescriptor::CPPTYPE_FLOAT;
        if (!std::isfinite(value) ||
            (is_float && std::fabs(value) > std::numeric_limits<float>::max())) {
          return Error(node, path + " " + text + " is out of range");
        }
        if (is_float) {
          const auto narrow = static_cast<float>(value);
          repeated ? r.AddFloat(out, &f, narrow) : r.SetFloat(out, &f, narrow);
        } else {
          repeated ? r.AddDouble(out, &f, value) : r.SetDouble(out, &f, value);
        }
        return Status::Ok();
      }
      case pb::FieldDescriptor::CPPTYPE_INT32:
      case pb::FieldDescriptor::CPPTYPE_INT64:
      case pb::FieldDescriptor::CPPTYPE_UINT32:
      case pb::FieldDescriptor::CPPTYPE_UINT64:
        return Integer(node, path, f, out);
      case pb::FieldDescriptor::CPPTYPE_MESSAGE:
        break;
    }
    return Error(node, path + " cannot be read from YAML");
  }

  // OK when `node` is a number as JSON writes one (quoted or not).
  Status Number(const YAML::Node& node, const std::string& path) const {
    const std::string& text = node.Scalar();
    if (IsNonFiniteWord(text)) return Error(node, path + " " + text + " is not a finite number");
    if (!IsJsonNumber(text)) {
      return Error(node, path + " " + QuotedForError(text) + " is not a number");
    }
    return Status::Ok();
  }

  Status Integer(const YAML::Node& node, const std::string& path, const pb::FieldDescriptor& f,
                 pb::Message* out) {
    if (Status s = Number(node, path); !s.ok()) return s;
    const std::string& text = node.Scalar();
    const IntegerRange range = RangeOf(f.cpp_type());
    const Status out_of_range =
        Error(node, path + " " + text + " is out of range (" + range.Text() + ")");
    WholeNumber n;
    if (text.find_first_of(".eE") == std::string::npos) {
      n.negative = text[0] == '-';
      errno = 0;
      n.magnitude = std::strtoull(text.c_str() + (n.negative ? 1 : 0), nullptr, 10);
      if (errno == ERANGE) return out_of_range;
      if (n.magnitude == 0) n.negative = false;  // -0
    } else {
      // A decimal or exponent form (2e9, 8.0) of a whole number.
      const double value = std::strtod(text.c_str(), nullptr);
      if (!std::isfinite(value)) return out_of_range;
      if (value != std::trunc(value))
        return Error(node, path + " " + text + " is not a whole number");
      // Beyond 2^53 the double is not the number the text says.
      if (std::fabs(value) > 0x1p53) {
        return Error(node,
                     path + " " + text + " is too large for its exponent form; write its digits");
      }
      n = {value < 0, static_cast<uint64_t>(std::fabs(value))};
    }
    if (!range.Holds(n)) return out_of_range;
    const pb::Reflection& r = *out->GetReflection();
    const bool repeated = f.is_repeated();
    // In range, so each conversion below is exact.
    const auto as_int64 = [&] {
      return n.negative ? -static_cast<int64_t>(n.magnitude - 1) - 1
                        : static_cast<int64_t>(n.magnitude);
    };
    switch (f.cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_INT32: {
        const auto v = static_cast<int32_t>(as_int64());
        repeated ? r.AddInt32(out, &f, v) : r.SetInt32(out, &f, v);
        break;
      }
      case pb::FieldDescriptor::CPPTYPE_INT64:
        repeated ? r.AddInt64(out, &f, as_int64()) : r.SetInt64(out, &f, as_int64());
        break;
      case pb::FieldDescriptor::CPPTYPE_UINT32: {
        const auto v = static_cast<uint32_t>(n.magnitude);
        repeated ? r.AddUInt32(out, &f, v) : r.SetUInt32(out, &f, v);
        break;
      }
      default:
        repeated ? r.AddUInt64(out, &f, n.magnitude) : r.SetUInt64(out, &f, n.magnitude);
        break;
    }
    return Status::Ok();
  }

  // `devices: {min: A, max: B}` into min_devices and devices.
  Status DeviceRange(const YAML::Node& range, int depth, pb::Message* spec) {
    std::vector<Entry> entries;
    if (Status s = Entries(range, "devices", depth, &entries); !s.ok()) return s;
    const pb::Descriptor& type = *spec->GetDescriptor();
    int given = 0;
    for (const Entry& entry : entries) {
      const std::string& key = entry.key.Scalar();
      if (key != "min" && key != "max") {
        return Error(entry.key, Join("devices", key) + " is not a field (devices: {min, max})");
      }
      const pb::FieldDescriptor& f =
          *type.FindFieldByName(key == "min" ? "min_devices" : "devices");
      if (Status s = Field(entry.value, "devices." + key, depth + 1, f, spec); !s.ok()) return s;
      ++given;
    }
    if (given < 2) return Error(range, "devices needs both min and max");
    return Status::Ok();
  }

  const std::string& source_;
  size_t values_ = 0;
};

}  // namespace

StatusOr<v1::JobSpec> ParseJobSpecYaml(const std::string& yaml, const std::string& source) {
  if (const size_t nul = yaml.find('\0'); nul != std::string::npos) {
    return Status::InvalidArgument(source + ": byte " + std::to_string(nul + 1) +
                                   " is a NUL; a job spec is YAML text, not a binary file");
  }
  StatusOr<YAML::Node> document = LoadOneYamlDocument(yaml, source, "a job spec");
  if (!document.ok()) return document.status();
  if (document->IsNull()) {
    return Status::InvalidArgument(source +
                                   ": holds no fields; a job spec is a YAML mapping of fields");
  }
  if (!document->IsMap()) {
    return Status::InvalidArgument(source + ": a job spec must be a YAML mapping of fields");
  }
  v1::JobSpec spec;
  if (Status s = SpecReader(source).Message(*document, "", 0, &spec); !s.ok()) return s;
  return spec;
}

// A spec is a few hundred bytes; a megabyte is some other file.
constexpr size_t kMaxSpecFileBytes = size_t{1} << 20;

StatusOr<v1::JobSpec> LoadJobSpecFile(const std::string& path) {
  StatusOr<std::string> text = ReadSmallFile(path, kMaxSpecFileBytes, path);
  if (!text.ok()) return text.status();
  return ParseJobSpecYaml(*text, path);
}

}  // namespace accumulus
