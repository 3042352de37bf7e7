#include "common/user_text.h"

#include <cstdio>

#include "common/utf8.h"

namespace accumulus {

std::string QuotedForError(std::string_view value) {
  constexpr size_t kLongest = 64;
  bool printable = value.size() <= kLongest;
  for (size_t i = 0; printable && i < value.size();) {
    uint32_t code_point = 0;
    const size_t length = DecodeUtf8(value, i, &code_point);
    printable = length > 0 && !IsControlCodePoint(code_point);
    i += length;
  }
  return printable ? "\"" + std::string(value) + "\""
                   : "(a " + std::to_string(value.size()) + "-byte string)";
}

Status CheckPrintableText(const std::string& field, std::string_view text, size_t max_bytes,
                          const char* what) {
  if (text.size() > max_bytes) {
    return Status::InvalidArgument(field + " has " + std::to_string(text.size()) +
                                   " bytes; at most " + std::to_string(max_bytes));
  }
  size_t character = 0;
  for (size_t i = 0; i < text.size(); ++character) {
    uint32_t code_point = 0;
    const size_t length = DecodeUtf8(text, i, &code_point);
    if (length == 0) {
      return Status::InvalidArgument(field + ": byte " + std::to_string(i + 1) + " is not UTF-8");
    }
    if (IsControlCodePoint(code_point)) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "U+%04X", code_point);
      return Status::InvalidArgument(field + ": character " + std::to_string(character + 1) + " (" +
                                     hex + ") is a control character; " + what +
                                     " is printable text");
    }
    i += length;
  }
  return Status::Ok();
}

}  // namespace accumulus
