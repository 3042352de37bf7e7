#include "common/data/safetensors_file.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "common/data/file_signature.h"
#include "common/data/header_cursor.h"
#include "common/data/little_endian.h"
#include "common/data/shown_name.h"
#include "common/utf8.h"

namespace accumulus::data {
namespace {

constexpr size_t kLengthBytes = 8;
// The reference implementation's bound on the header (a few entries per
// tensor; a larger length is a damaged or foreign file).
constexpr uint64_t kMostHeaderBytes = 100'000'000;
// Nesting the header may have (only __metadata__ is an object in an
// object); deeper is refused rather than recursed into.
constexpr int kMostDepth = 32;

// A cursor over the JSON header: only what a safetensors header holds —
// objects, arrays, strings (escapes included), whole numbers; any other
// value is skipped where it is allowed (in __metadata__, unknown keys).
class JsonCursor : public HeaderCursor {
 public:
  using HeaderCursor::HeaderCursor;

  // A string, its escapes decoded (\uXXXX to UTF-8, surrogate pairs
  // joined).
  std::optional<std::string> String() {
    if (!Consume('"')) return std::nullopt;
    std::string value;
    while (at_ < text_.size() && text_[at_] != '"') {
      const char c = text_[at_++];
      if (static_cast<unsigned char>(c) < 0x20) return std::nullopt;
      if (c != '\\') {
        value += c;
        continue;
      }
      if (at_ >= text_.size()) return std::nullopt;
      const char e = text_[at_++];
      static constexpr std::string_view kPlain = "\"\\/";
      static constexpr std::string_view kEscapes = "bfnrt";
      static constexpr std::string_view kMeanings = "\b\f\n\r\t";
      if (kPlain.find(e) != std::string_view::npos) {
        value += e;
      } else if (const size_t k = kEscapes.find(e); k != std::string_view::npos) {
        value += kMeanings[k];
      } else if (e == 'u') {
        std::optional<uint32_t> code = Hex4();
        if (!code) return std::nullopt;
        if (*code >= 0xD800 && *code < 0xDC00) {  // a high surrogate: its pair follows
          if (text_.substr(at_, 2) != "\\u") return std::nullopt;
          at_ += 2;
          const std::optional<uint32_t> low = Hex4();
          if (!low || *low < 0xDC00 || *low >= 0xE000) return std::nullopt;
          *code = 0x10000 + ((*code - 0xD800) << 10) + (*low - 0xDC00);
        } else if (*code >= 0xDC00 && *code < 0xE000) {
          return std::nullopt;
        }
        AppendUtf8(*code, &value);
      } else {
        return std::nullopt;
      }
    }
    if (at_ >= text_.size()) return std::nullopt;
    ++at_;  // the closing quote
    return value;
  }

  // A whole number from 0 to 2^62 (no sign, fraction or exponent).
  std::optional<uint64_t> Whole() {
    SkipSpaces();
    const size_t first = at_;
    uint64_t value = 0;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
      if (value > (uint64_t{1} << 62) / 10) return std::nullopt;
      value = value * 10 + static_cast<uint64_t>(text_[at_++] - '0');
    }
    if (at_ == first || (text_[first] == '0' && at_ - first > 1)) return std::nullopt;
    if (at_ < text_.size() && (text_[at_] == '.' || text_[at_] == 'e' || text_[at_] == 'E')) {
      return std::nullopt;
    }
    return value;
  }

  // [N, ...] of whole numbers.
  std::optional<std::vector<uint64_t>> Wholes() {
    if (!Consume('[')) return std::nullopt;
    std::vector<uint64_t> values;
    if (Consume(']')) return values;
    do {
      const std::optional<uint64_t> value = Whole();
      if (!value) return std::nullopt;
      values.push_back(*value);
    } while (Consume(','));
    if (!Consume(']')) return std::nullopt;
    return values;
  }

  // Any JSON value, unread.
  bool SkipValue(int depth = 0) {
    if (depth > kMostDepth) return false;
    SkipSpaces();
    if (at_ >= text_.size()) return false;
    const char c = text_[at_];
    if (c == '"') return String().has_value();
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++at_;
      if (Consume(close)) return true;
      do {
        if (c == '{' && !(String() && Consume(':'))) return false;
        if (!SkipValue(depth + 1)) return false;
      } while (Consume(','));
      return Consume(close);
    }
    // A number, true, false or null: its characters.
    const size_t first = at_;
    while (at_ < text_.size() &&
           std::string_view("+-.0123456789abcdefghijklmnopqrstuvwxyzE").find(text_[at_]) !=
               std::string_view::npos) {
      ++at_;
    }
    const std::string_view word = text_.substr(first, at_ - first);
    return word == "true" || word == "false" || word == "null" ||
           (!word.empty() && (word[0] == '-' || (word[0] >= '0' && word[0] <= '9')));
  }

 private:
  std::optional<uint32_t> Hex4() {
    if (text_.size() - at_ < 4) return std::nullopt;
    uint32_t code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[at_++];
      const int digit = h >= '0' && h <= '9'   ? h - '0'
                        : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                               : -1;
      if (digit < 0) return std::nullopt;
      code = code << 4 | static_cast<uint32_t>(digit);
    }
    return code;
  }
};

// A safetensors dtype of numbers, or nothing.
std::optional<ElementType> FromDtype(const std::string& dtype) {
  static constexpr std::pair<std::string_view, ElementType> kTypes[] = {
      {"BOOL", ElementType::kBool},     {"U8", ElementType::kUint8},
      {"I8", ElementType::kInt8},       {"U16", ElementType::kUint16},
      {"I16", ElementType::kInt16},     {"U32", ElementType::kUint32},
      {"I32", ElementType::kInt32},     {"U64", ElementType::kUint64},
      {"I64", ElementType::kInt64},     {"F16", ElementType::kFloat16},
      {"BF16", ElementType::kBFloat16}, {"F32", ElementType::kFloat32},
      {"F64", ElementType::kFloat64},
  };
  for (const auto& [name, type] : kTypes) {
    if (dtype == name) return type;
  }
  return std::nullopt;
}

std::string Described(const SafetensorsTensor& t) {
  return ShownName(t.name) + " (" + ElementTypeName(t.type) + " " + ShapeText(t.shape) + ")";
}

// One tensor's entry, {"dtype": …, "shape": […], "data_offsets": [B, E]}
// (other keys skipped), from `json` at its '{'; its range checked against
// the `data_size` bytes of data from `data_start`. Errors as Parse's.
StatusOr<SafetensorsTensor> ParseEntry(const std::string& field, const std::string& path,
                                       JsonCursor* cursor, std::string name, size_t data_start,
                                       size_t data_size) {
  auto fail = [&](size_t offset, const std::string& expected) {
    return ArrayError(field, path, offset, expected);
  };
  JsonCursor& json = *cursor;
  const size_t entry_offset = json.offset();
  if (!json.Consume('{')) return fail(entry_offset, "'{' (the tensor's entry)");
  SafetensorsTensor tensor;
  tensor.name = std::move(name);
  std::optional<std::string> dtype;
  std::optional<std::vector<uint64_t>> shape, offsets;
  size_t offsets_offset = entry_offset;
  if (!json.Consume('}')) {
    do {
      const size_t key_offset = json.offset();
      const std::optional<std::string> key = json.String();
      if (!key || !json.Consume(':')) {
        return fail(key_offset, "a quoted key and ':' in the tensor's entry");
      }
      const size_t value_offset = json.offset();
      if (*key == "dtype") {
        dtype = json.String();
        if (!dtype) return fail(value_offset, "a string for \"dtype\"");
        const std::optional<ElementType> type = FromDtype(*dtype);
        if (!type) {
          return fail(value_offset,
                      "a dtype of numbers: BOOL, U8, I8, U16, I16, U32, I32, U64, I64, F16, "
                      "BF16, F32 or F64; found \"" +
                          ShownName(dtype->substr(0, 12)) + "\"");
        }
        tensor.type = *type;
      } else if (*key == "shape") {
        tensor.shape_offset = value_offset;
        shape = json.Wholes();
        if (!shape) return fail(value_offset, "a list of whole numbers for \"shape\"");
      } else if (*key == "data_offsets") {
        offsets_offset = value_offset;
        offsets = json.Wholes();
        if (!offsets || offsets->size() != 2) {
          return fail(value_offset, "[BEGIN, END] for \"data_offsets\"");
        }
      } else if (!json.SkipValue()) {
        return fail(value_offset, "a JSON value");
      }
    } while (json.Consume(','));
    if (!json.Consume('}')) return fail(json.offset(), "',' or '}' in the tensor's entry");
  }
  if (!dtype || !shape || !offsets) {
    return fail(entry_offset, std::string("the key \"") +
                                  (!dtype   ? "dtype"
                                   : !shape ? "shape"
                                            : "data_offsets") +
                                  "\" in " + ShownName(tensor.name) + "'s entry");
  }
  const uint64_t begin = (*offsets)[0], end = (*offsets)[1];
  if (begin > end || end > data_size) {
    return fail(offsets_offset, "a byte range within the " + std::to_string(data_size) +
                                    " bytes of data after the header");
  }
  tensor.begin = data_start + begin;
  tensor.end = data_start + end;
  for (uint64_t d : *shape) tensor.shape.push_back(static_cast<int64_t>(d));
  return tensor;
}

}  // namespace

StatusOr<SafetensorsFile> SafetensorsFile::Parse(const std::string& field, const std::string& path,
                                                 std::string_view bytes) {
  auto fail = [&](size_t offset, const std::string& expected) {
    return ArrayError(field, path, offset, expected);
  };
  if (bytes.size() < kLengthBytes) {
    return fail(0, "an 8-byte header length (a safetensors file)");
  }
  const uint64_t header_size = LittleEndian(bytes, 0, kLengthBytes);
  // At least "{}": the first byte of the header is read only when it is
  // there (an empty header, length 0, was fuzz_safetensors' first find).
  if (header_size < 2 || header_size > kMostHeaderBytes ||
      header_size > bytes.size() - kLengthBytes || bytes[kLengthBytes] != '{') {
    const std::string hint = FileSignatureHint(bytes);
    return fail(0,
                "a safetensors file: an 8-byte header length, then that many bytes of JSON "
                "beginning with '{'" +
                    (hint.empty() ? "" : "; " + hint));
  }
  const size_t data_start = kLengthBytes + header_size;
  const size_t data_size = bytes.size() - data_start;
  SafetensorsFile file(field, path, bytes);
  JsonCursor json(bytes.substr(kLengthBytes, header_size), kLengthBytes);
  std::set<std::string> seen;
  json.Consume('{');
  if (!json.Consume('}')) {
    do {
      const size_t key_offset = json.offset();
      std::optional<std::string> key = json.String();
      if (!key) return fail(key_offset, "a quoted tensor name in the header");
      if (!json.Consume(':')) return fail(json.offset(), "':' after the tensor name");
      if (!seen.insert(*key).second) {
        return fail(key_offset, "each tensor once; " + ShownName(*key) + " is there twice");
      }
      if (*key == "__metadata__") {
        if (!json.SkipValue()) return fail(json.offset(), "a JSON value for __metadata__");
        continue;
      }
      StatusOr<SafetensorsTensor> tensor =
          ParseEntry(field, path, &json, std::move(*key), data_start, data_size);
      if (!tensor.ok()) return tensor.status();
      file.tensors_.push_back(std::move(*tensor));
    } while (json.Consume(','));
    if (!json.Consume('}')) return fail(json.offset(), "',' or '}' in the header");
  }
  if (!json.AtEnd()) return fail(json.offset(), "only spaces after the header's object");
  return file;
}

StatusOr<NumericArray> SafetensorsFile::Array(const std::string& name_field,
                                              const std::string& name) const {
  const SafetensorsTensor* found = nullptr;
  for (const SafetensorsTensor& t : tensors_) {
    if (name.empty() ? tensors_.size() == 1 : t.name == name) found = &t;
  }
  if (found == nullptr) {
    // By name, as safe_open(...).keys() lists them (the file orders them
    // by alignment).
    std::vector<const SafetensorsTensor*> sorted;
    for (const SafetensorsTensor& t : tensors_) sorted.push_back(&t);
    std::sort(sorted.begin(), sorted.end(),
              [](const auto* a, const auto* b) { return a->name < b->name; });
    std::vector<std::string> described;
    for (const SafetensorsTensor* t : sorted) described.push_back(Described(*t));
    const std::string holds = tensors_.empty() ? " holds no tensor"
                                               : " holds " + std::to_string(tensors_.size()) +
                                                     " tensors (" + ShownList(described) + ")";
    return Status::InvalidArgument(name.empty() ? name_field + " is required: " + field_ + " " +
                                                      path_ + holds + ": name the one to read"
                                                : name_field + " \"" + name + "\" is not in " +
                                                      field_ + " " + path_ + ", which" + holds);
  }
  const SafetensorsTensor& t = *found;
  NumericArray array;
  array.type = t.type;
  array.dims = t.shape;
  if (array.dims.empty()) {
    return ArrayError(field_, path_, t.shape_offset,
                      "at least one dimension in " + ShownName(t.name) + "'s \"shape\"");
  }
  // The tensor's range is all of the data PlaceData may see: its length
  // must be the shape's.
  if (Status s = PlaceData(field_, path_ + "[" + ShownName(t.name) + "]", bytes_.substr(0, t.end),
                           t.shape_offset, t.begin, &array);
      !s.ok()) {
    return s;
  }
  return array;
}

}  // namespace accumulus::data
