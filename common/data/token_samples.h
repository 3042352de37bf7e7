// Token files as the trainer reads them, cut into samples without LibTorch
// and without copying a token: a flat array of little-endian uint8 or
// uint16 ids, and each sample a span of it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace accumulus::data {

struct TokenConfig {
  std::string path;  // for errors
  bool uint16 = false;
  // Documents split at `separator`, each cut into samples of up to
  // sequence_length + 1 tokens; or (blocks) the whole file so.
  bool blocks = false;
  int64_t separator = 0;
  int64_t sequence_length = 64;
};

// A sample: tokens [begin, begin + length) of the file, 2 ≤ length ≤
// sequence_length + 1 (inputs are its first length - 1 tokens, targets its
// last length - 1).
struct TokenSpan {
  int64_t begin = 0;
  int64_t length = 0;
};

// Where a token file's samples lie. Blocks are computed from their number;
// documents are found by one pass over the file and kept as spans (16
// bytes per sample, against 2 to 130 bytes of tokens in it).
class TokenSamples {
 public:
  // INVALID_ARGUMENT naming the file and the byte for an odd uint16 file, or
  // when no document has two tokens.
  static StatusOr<TokenSamples> Index(std::string_view bytes, const TokenConfig& config);

  int64_t size() const;
  // Sample i, 0 ≤ i < size().
  TokenSpan operator[](int64_t i) const;

 private:
  TokenSamples() = default;

  // blocks: the file's token count and the block stride; documents: spans.
  bool blocks_ = false;
  int64_t tokens_ = 0;
  int64_t stride_ = 0;
  std::vector<TokenSpan> documents_;
};

// Token i of a file of uint8 or (little-endian) uint16 ids.
inline int64_t TokenAt(std::string_view bytes, bool uint16, int64_t i) {
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  return uint16 ? int64_t{b[2 * i]} | (int64_t{b[2 * i + 1]} << 8) : int64_t{b[i]};
}

}  // namespace accumulus::data
