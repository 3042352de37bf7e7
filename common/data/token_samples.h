// Token files as the trainer reads them, cut into samples without LibTorch:
// a flat array of little-endian uint8 or uint16 ids.
#pragma once

#include <cstdint>
#include <string>
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

struct TokenSamples {
  std::vector<std::vector<int64_t>> samples;
  int64_t max_token = 0;
};

// INVALID_ARGUMENT naming the file and the byte for an odd uint16 file, or
// when no document has two tokens.
StatusOr<TokenSamples> SplitTokens(const std::string& bytes, const TokenConfig& config);

}  // namespace accumulus::data
