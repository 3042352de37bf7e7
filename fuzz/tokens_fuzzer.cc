// The token reader: each sample has 2 to sequence_length + 1 tokens, all
// from the file, and together they cover every token that has a successor
// within its document.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/data/token_samples.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  accumulus::data::TokenConfig config;
  config.path = "fuzz.bin";
  config.uint16 = data[0] & 1;
  config.blocks = data[0] & 2;
  config.separator = data[1];
  config.sequence_length = 1 + (data[0] >> 2) % 16;
  const std::string bytes(reinterpret_cast<const char*>(data) + 2, size - 2);
  auto split = accumulus::data::SplitTokens(bytes, config);
  if (!split.ok()) return 0;
  for (const auto& sample : split->samples) {
    FUZZ_CHECK(sample.size() >= 2);
    FUZZ_CHECK(static_cast<int64_t>(sample.size()) <= config.sequence_length + 1);
    for (int64_t t : sample) FUZZ_CHECK(t >= 0 && t <= split->max_token);
  }
  return 0;
}
