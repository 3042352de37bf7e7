// Token files as the trainer reads them, cut into samples without LibTorch
// and without copying a token: a flat array of little-endian uint8, uint16
// or uint32 ids, and each sample a span of it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace accumulus::data {

struct TokenConfig {
  std::string path;  // for errors
  int width = 1;     // bytes per id: 1 (uint8), 2 (uint16) or 4 (uint32)
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
  // INVALID_ARGUMENT naming the file and the byte for a file that is no whole
  // number of ids, or when no document has two tokens.
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

// Token i of a file of little-endian ids of `width` bytes (1, 2 or 4). One
// branch per width, no loop over bytes: a micro-batch's gather reads every
// token of it through here.
inline int64_t TokenAt(std::string_view bytes, int width, int64_t i) {
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data()) + i * width;
  switch (width) {
    case 1:
      return b[0];
    case 2:
      return int64_t{b[0]} | int64_t{b[1]} << 8;
    default:
      return int64_t{b[0]} | int64_t{b[1]} << 8 | int64_t{b[2]} << 16 | int64_t{b[3]} << 24;
  }
}

// The largest id a token file may hold where the model's vocabulary is its
// largest id + 1 (uint32 files; uint8 and uint16 ones take every id their
// width has): far above any tokenizer's, far below an embedding no device
// holds.
inline constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 2;

// The largest id in the file (one pass), or INVALID_ARGUMENT naming the
// file and the byte of the first id above kMaxTokenId.
StatusOr<int64_t> LargestTokenId(std::string_view bytes, const TokenConfig& config);

}  // namespace accumulus::data
