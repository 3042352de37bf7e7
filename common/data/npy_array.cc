#include "common/data/npy_array.h"

#include <cctype>
#include <optional>
#include <string_view>

#include "common/data/file_signature.h"
#include "common/data/header_cursor.h"
#include "common/data/little_endian.h"

namespace accumulus::data {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

// The header's dict literal, read from a cursor: only what numpy.save
// writes — quoted keys and strings, True and False, tuples of whole numbers.
class HeaderReader : public HeaderCursor {
 public:
  using HeaderCursor::HeaderCursor;

  // '...' or "..." without escapes.
  std::optional<std::string> String() {
    SkipSpaces();
    if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"')) return std::nullopt;
    const char quote = text_[at_];
    const size_t end = text_.find(quote, at_ + 1);
    if (end == std::string_view::npos) return std::nullopt;
    std::string value(text_.substr(at_ + 1, end - at_ - 1));
    if (value.find('\\') != std::string::npos) return std::nullopt;
    at_ = end + 1;
    return value;
  }

  std::optional<bool> Boolean() {
    SkipSpaces();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      if (text_.substr(at_, std::string_view(word).size()) == word) {
        at_ += std::string_view(word).size();
        return value;
      }
    }
    return std::nullopt;
  }

  // (), (N,) or (N, M, ...): whole numbers below 2^62 (Python 2's numpy
  // wrote them with an L).
  std::optional<std::vector<int64_t>> Tuple() {
    if (!Consume('(')) return std::nullopt;
    std::vector<int64_t> values;
    while (!Consume(')')) {
      if (!values.empty() && !Consume(',')) return std::nullopt;
      if (Consume(')')) break;  // a trailing comma
      SkipSpaces();
      const size_t first = at_;
      int64_t value = 0;
      while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
        if (value > (int64_t{1} << 62) / 10) return std::nullopt;
        value = value * 10 + (text_[at_++] - '0');
      }
      if (at_ == first) return std::nullopt;
      if (at_ < text_.size() && text_[at_] == 'L') ++at_;
      values.push_back(value);
    }
    return values;
  }
};

// A dtype string: a byte order ('<', '>', '|' or '=', native, which is
// little-endian on every machine this runs on) and a kind with its size.
std::optional<NumericArray> FromDescr(const std::string& descr) {
  NumericArray array;
  std::string_view code = descr;
  if (!code.empty() && (code[0] == '<' || code[0] == '>' || code[0] == '|' || code[0] == '=')) {
    array.big_endian = code[0] == '>';
    code.remove_prefix(1);
  }
  static constexpr std::pair<std::string_view, ElementType> kTypes[] = {
      {"b1", ElementType::kBool},   {"u1", ElementType::kUint8}, {"i1", ElementType::kInt8},
      {"u2", ElementType::kUint16}, {"i2", ElementType::kInt16}, {"f2", ElementType::kFloat16},
      {"u4", ElementType::kUint32}, {"i4", ElementType::kInt32}, {"f4", ElementType::kFloat32},
      {"u8", ElementType::kUint64}, {"i8", ElementType::kInt64}, {"f8", ElementType::kFloat64},
  };
  for (const auto& [name, type] : kTypes) {
    if (code == name) {
      array.type = type;
      return array;
    }
  }
  return std::nullopt;
}

// A dtype as the error may show it: a short code of letters, digits and a
// byte order, or nothing (the header may hold anything).
std::string Shown(const std::string& descr) {
  if (descr.empty() || descr.size() > 8) return "";
  for (char c : descr) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '<' && c != '>' && c != '|' &&
        c != '=') {
      return "";
    }
  }
  return "; found '" + descr + "'";
}

// The header: the array's type, layout and dims, and where its shape and
// its data start.
struct NpyHeader {
  NumericArray array;
  size_t shape_offset = 0;
  size_t data_offset = 0;
};

StatusOr<NpyHeader> ParseHeader(const std::string& field, const std::string& path,
                                std::string_view bytes) {
  auto fail = [&](size_t offset, const std::string& expected) {
    return ArrayError(field, path, offset, expected);
  };
  if (bytes.compare(0, kMagic.size(), kMagic) != 0) {
    const std::string hint = FileSignatureHint(bytes);
    return fail(0, "the .npy magic string \\x93NUMPY" + (hint.empty() ? "" : "; " + hint));
  }
  if (bytes.size() < 8 || bytes[6] < 1 || bytes[6] > 3) {
    return fail(6, "format version 1, 2 or 3");
  }
  // Version 1: a little-endian uint16 header length; 2 and 3: a uint32.
  const size_t length_size = bytes[6] == 1 ? 2 : 4;
  const size_t header_start = 8 + length_size;
  if (bytes.size() < header_start) return fail(8, "the header's length");
  const size_t header_length = LittleEndian(bytes, 8, length_size);
  if (bytes.size() - header_start < header_length) {
    return fail(8, "a header of " + std::to_string(header_length) + " bytes, found " +
                       std::to_string(bytes.size() - header_start));
  }
  HeaderReader header(bytes.substr(header_start, header_length), header_start);
  if (!header.Consume('{')) return fail(header.offset(), "'{' (the header's dict)");
  std::optional<NumericArray> array;
  std::optional<bool> fortran_order;
  std::optional<std::vector<int64_t>> shape;
  size_t shape_offset = header_start;
  size_t dict_end = header.offset();
  while (!header.Consume('}')) {
    if ((array || fortran_order || shape) && !header.Consume(',')) {
      return fail(header.offset(), "',' or '}' in the header's dict");
    }
    dict_end = header.offset();
    if (header.Consume('}')) break;  // a trailing comma
    const size_t key_offset = header.offset();
    const std::optional<std::string> key = header.String();
    if (!key) return fail(key_offset, "a quoted key in the header's dict");
    if (!header.Consume(':')) return fail(header.offset(), "':' after the key");
    const size_t value_offset = header.offset();
    if (*key == "descr" && !array) {
      const std::optional<std::string> descr = header.String();
      if (!descr) return fail(value_offset, "a dtype string for 'descr' (not a structured dtype)");
      array = FromDescr(*descr);
      if (!array) {
        return fail(value_offset,
                    "a numeric dtype: b1 (bool), i1, i2, i4, i8, u1, u2, u4, u8, f2, f4 or f8" +
                        Shown(*descr));
      }
    } else if (*key == "fortran_order" && !fortran_order) {
      fortran_order = header.Boolean();
      if (!fortran_order) return fail(value_offset, "True or False for 'fortran_order'");
    } else if (*key == "shape" && !shape) {
      shape_offset = value_offset;
      shape = header.Tuple();
      if (!shape) return fail(value_offset, "a tuple of whole numbers for 'shape'");
    } else {
      return fail(key_offset, "each of the keys 'descr', 'fortran_order' and 'shape' once");
    }
    dict_end = header.offset();
  }
  if (!header.AtEnd()) return fail(header.offset(), "only spaces after the header's dict");
  if (!array || !fortran_order || !shape) {
    return fail(dict_end, std::string("the key '") +
                              (!array           ? "descr"
                               : !fortran_order ? "fortran_order"
                                                : "shape") +
                              "' in the header's dict");
  }
  if (shape->empty()) return fail(shape_offset, "at least one dimension in 'shape'");
  array->column_major = *fortran_order;
  array->dims = *shape;
  return NpyHeader{*array, shape_offset, header_start + header_length};
}

}  // namespace

StatusOr<NumericArray> ParseNpy(const std::string& field, const std::string& path,
                                std::string_view bytes) {
  StatusOr<NpyHeader> header = ParseHeader(field, path, bytes);
  if (!header.ok()) return header.status();
  if (Status s =
          PlaceData(field, path, bytes, header->shape_offset, header->data_offset, &header->array);
      !s.ok()) {
    return s;
  }
  return header->array;
}

std::string DescribeNpy(std::string_view head) {
  StatusOr<NpyHeader> header = ParseHeader("", "", head);
  if (!header.ok()) return "";
  return ElementTypeName(header->array.type) + " " + ShapeText(header->array.dims);
}

}  // namespace accumulus::data
