// UTF-8 as accumulus reads what users write: well-formed sequences only,
// and the code points that change how text displays rather than showing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace accumulus {

// The length (1 to 4) of the well-formed UTF-8 sequence at `s[i]` and its
// code point, or 0 when the bytes there are not one: a stray continuation
// byte, a sequence cut short, an overlong form, a surrogate, or a value past
// U+10FFFF. `i` must be < s.size().
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* code_point);

// C0 controls, DEL, C1 controls, and the marks, embeddings, overrides and
// isolates that reorder text on display (U+061C, U+200E/F, U+202A–E,
// U+2066–9): what a terminal obeys instead of showing.
bool IsControlCodePoint(uint32_t code_point);

// `code_point` (at most U+10FFFF, not a surrogate) appended to `out` as
// UTF-8.
void AppendUtf8(uint32_t code_point, std::string* out);

}  // namespace accumulus
