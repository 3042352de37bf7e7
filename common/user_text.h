// Text that clients send: how an error may show it, and the bounds on what
// the controller keeps of it (names, reasons, labels, paths).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace accumulus {

// Short printable text in double quotes; anything else — long, not UTF-8,
// or holding a control character (an escape sequence) — described by its
// size instead, "(a 5000-byte string)", so that an error can neither grow
// with the input nor carry it to a terminal.
std::string QuotedForError(std::string_view value);

// OK for at most `max_bytes` of well-formed UTF-8 without control
// characters; else INVALID_ARGUMENT naming `field` and the length, or the
// position and code point of the first bad character (never the character:
// it may be an escape sequence). `what` says what the text is ("a job
// name").
Status CheckPrintableText(const std::string& field, std::string_view text, size_t max_bytes,
                          const char* what);

}  // namespace accumulus
