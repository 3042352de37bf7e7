#include "common/data/token_samples.h"

#include <algorithm>

namespace accumulus::data {

StatusOr<TokenSamples> TokenSamples::Index(std::string_view bytes, const TokenConfig& config) {
  const auto width = static_cast<size_t>(config.width);
  if (bytes.size() % width != 0) {
    return Status::InvalidArgument(
        "data.path " + config.path + ": " + std::to_string(bytes.size()) +
        " bytes is not a whole number of uint" + std::to_string(8 * width) + " tokens (at byte " +
        std::to_string(bytes.size() - bytes.size() % width) + ")");
  }
  if (config.sequence_length < 1) {
    return Status::InvalidArgument("data.sequence_length " +
                                   std::to_string(config.sequence_length) + " must be positive");
  }
  TokenSamples out;
  const auto tokens = static_cast<int64_t>(bytes.size() / width);
  const int64_t length = config.sequence_length;
  if (config.blocks) {
    // Blocks start every `length` tokens, each with one token more for the
    // last target; the last one takes what is left if that is 2 or more.
    out.blocks_ = true;
    out.tokens_ = tokens;
    out.stride_ = length;
  } else {
    auto add_document = [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s + 1 < end; s += length) {
        out.documents_.push_back({s, std::min(end, s + length + 1) - s});
      }
    };
    int64_t begin = 0;
    for (int64_t i = 0; i < tokens; ++i) {
      if (TokenAt(bytes, config.width, i) == config.separator) {
        add_document(begin, i);
        begin = i + 1;
      }
    }
    add_document(begin, tokens);
    out.documents_.shrink_to_fit();
  }
  if (out.size() == 0) {
    return Status::InvalidArgument("data.path " + config.path + ": " + std::to_string(tokens) +
                                   (tokens == 1 ? " token holds no " : " tokens hold no ") +
                                   (config.blocks ? "block" : "document") +
                                   " of at least 2 tokens");
  }
  return out;
}

int64_t TokenSamples::size() const {
  if (!blocks_) return static_cast<int64_t>(documents_.size());
  return tokens_ >= 2 ? (tokens_ - 2) / stride_ + 1 : 0;
}

TokenSpan TokenSamples::operator[](int64_t i) const {
  if (!blocks_) return documents_[static_cast<size_t>(i)];
  const int64_t begin = i * stride_;
  return {begin, std::min(tokens_, begin + stride_ + 1) - begin};
}

StatusOr<int64_t> LargestTokenId(std::string_view bytes, const TokenConfig& config) {
  const auto tokens = static_cast<int64_t>(bytes.size()) / config.width;
  int64_t largest = -1;
  for (int64_t i = 0; i < tokens; ++i) {
    const int64_t id = TokenAt(bytes, config.width, i);
    if (id > kMaxTokenId) {
      return Status::InvalidArgument(
          "data.path " + config.path + ": at byte " + std::to_string(i * config.width) +
          ": expected a token id of at most " + std::to_string(kMaxTokenId) +
          " (the vocabulary is the largest id + 1)");
    }
    largest = std::max(largest, id);
  }
  return largest;
}

}  // namespace accumulus::data
