// A cursor over a file format's text header (.npy's dict literal,
// safetensors' JSON) that knows where it is in the file, so that an error
// names the byte: what the formats' header readers share.
#pragma once

#include <cstddef>
#include <string_view>

namespace accumulus::data {

class HeaderCursor {
 public:
  // `text` starts at byte `file_offset` of the file.
  HeaderCursor(std::string_view text, size_t file_offset) : text_(text), base_(file_offset) {}

  // Where the next token starts in the file.
  size_t offset() {
    SkipSpaces();
    return base_ + at_;
  }

  // The character `c` next (after spaces), consumed; false otherwise.
  bool Consume(char c) {
    SkipSpaces();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }

  // Only spaces are left.
  bool AtEnd() {
    SkipSpaces();
    return at_ == text_.size();
  }

 protected:
  void SkipSpaces() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\r' || text_[at_] == '\t')) {
      ++at_;
    }
  }

  std::string_view text_;
  size_t base_;
  size_t at_ = 0;
};

}  // namespace accumulus::data
