#include "client/terminal_text.h"

#include <cstdint>
#include <cstdio>

#include "common/utf8.h"

namespace accumulus::client {
namespace {

std::string Escaped(uint32_t code_point) {
  switch (code_point) {
    case '\n':
      return "\\n";
    case '\t':
      return "\\t";
    case '\r':
      return "\\r";
  }
  char buffer[16];
  if (code_point < 0x80) {
    std::snprintf(buffer, sizeof buffer, "\\x%02X", code_point);
  } else {
    std::snprintf(buffer, sizeof buffer, "\\u{%04X}", code_point);
  }
  return buffer;
}

}  // namespace

std::string TerminalSafe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t code_point = 0;
    const size_t length = DecodeUtf8(text, i, &code_point);
    if (length == 0) {  // not UTF-8: the byte itself
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\x%02X", static_cast<unsigned char>(text[i]));
      out += buffer;
      ++i;
      continue;
    }
    if (IsControlCodePoint(code_point)) {
      out += Escaped(code_point);
    } else if (code_point == '\\') {
      out += "\\\\";
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  return out;
}

size_t DisplayWidth(std::string_view text) {
  size_t columns = 0;
  for (char c : text) columns += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return columns;
}

std::string FitToWidth(std::string_view text, size_t columns) {
  if (DisplayWidth(text) <= columns) return std::string(text);
  if (columns == 0) return "";
  // Keep columns - 1 code points, then the ellipsis.
  size_t kept = 0, end = 0;
  for (; end < text.size(); ++end) {
    const bool starts = (static_cast<unsigned char>(text[end]) & 0xC0) != 0x80;
    if (starts && kept++ == columns - 1) break;
  }
  return std::string(text.substr(0, end)) + "…";
}

std::string TerminalSafeLines(std::string_view text) {
  std::string out;
  for (size_t start = 0;;) {
    const size_t end = text.find('\n', start);
    out += TerminalSafe(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return out;
    out += '\n';
    start = end + 1;
  }
}

}  // namespace accumulus::client
