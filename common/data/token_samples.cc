#include "common/data/token_samples.h"

#include <algorithm>
#include <cstddef>

namespace accumulus::data {

StatusOr<TokenSamples> SplitTokens(const std::string& bytes, const TokenConfig& config) {
  const size_t width = config.uint16 ? 2 : 1;
  if (bytes.size() % width != 0) {
    return Status::InvalidArgument("data.path " + config.path + ": " +
                                   std::to_string(bytes.size()) +
                                   " bytes is not a whole number of uint16 tokens (at byte " +
                                   std::to_string(bytes.size() - 1) + ")");
  }
  if (config.sequence_length < 1) {
    return Status::InvalidArgument("data.sequence_length " +
                                   std::to_string(config.sequence_length) + " must be positive");
  }
  std::vector<int64_t> tokens(bytes.size() / width);
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  TokenSamples out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = width == 2 ? int64_t{b[2 * i]} | (int64_t{b[2 * i + 1]} << 8) : int64_t{b[i]};
    out.max_token = std::max(out.max_token, tokens[i]);
  }
  const auto length = static_cast<size_t>(config.sequence_length);
  // Each sample: up to length + 1 tokens (inputs are the first `length`,
  // targets the last `length`).
  auto add_document = [&](size_t begin, size_t end) {
    for (size_t s = begin; s + 1 < end; s += length) {
      const size_t e = std::min(end, s + length + 1);
      out.samples.emplace_back(tokens.begin() + static_cast<std::ptrdiff_t>(s),
                               tokens.begin() + static_cast<std::ptrdiff_t>(e));
    }
  };
  if (config.blocks) {
    add_document(0, tokens.size());
  } else {
    size_t begin = 0;
    for (size_t i = 0; i <= tokens.size(); ++i) {
      if (i == tokens.size() || tokens[i] == config.separator) {
        add_document(begin, i);
        begin = i + 1;
      }
    }
  }
  if (out.samples.empty()) {
    return Status::InvalidArgument("data.path " + config.path +
                                   ": no document of at least 2 tokens");
  }
  return out;
}

}  // namespace accumulus::data
