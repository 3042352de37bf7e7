// Text that users (or their data) wrote, made safe to print on a terminal.
//
// A job name, a reason, a log line or a path reaches the CLI from whoever
// submitted the job; printed as it is, an escape sequence in it could
// rewrite the terminal, move the cursor over earlier output or set the
// window title, and a bidirectional override could make one text look like
// another. Everything the CLI prints in text form goes through
// TerminalSafe; JSON output (-o json) is escaped by its own rules.
#pragma once

#include <string>
#include <string_view>

namespace accumulus::client {

// `text` with C0 controls and DEL as \n, \t, \r or \xNN, C1 controls and
// the Unicode bidirectional controls as \u{XXXX}, bytes that are not UTF-8
// as \xNN, and a backslash as \\ (so the escapes are unambiguous). Printable
// UTF-8 (accents, ×, CJK, emoji) stays as it is.
std::string TerminalSafe(std::string_view text);
// The same, line by line: a newline stays one (for messages of several
// lines, such as a spec's errors).
std::string TerminalSafeLines(std::string_view text);

// Columns `text` takes on a terminal: its UTF-8 code points ("×" is two
// bytes, one column; the CLI writes no wide or combining characters).
size_t DisplayWidth(std::string_view text);
// `text` cut to at most `columns` columns at a code point boundary, its last
// column "…" when cut.
std::string FitToWidth(std::string_view text, size_t columns);

}  // namespace accumulus::client
