// The token reader: each sample is a span of 2 to sequence_length + 1
// tokens inside the file, and no span holds a separator (documents layout).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/data/token_samples.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  accumulus::data::TokenConfig config;
  config.path = "fuzz.bin";
  config.width = 1 << (data[0] & 3) % 3;
  config.blocks = data[0] & 4;
  config.separator = data[1];
  config.sequence_length = 1 + (data[0] >> 3) % 16;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 2, size - 2);
  const auto tokens = static_cast<int64_t>(bytes.size()) / config.width;
  const auto largest = accumulus::data::LargestTokenId(bytes, config);
  if (largest.ok()) FUZZ_CHECK(*largest <= accumulus::data::kMaxTokenId);
  auto samples = accumulus::data::TokenSamples::Index(bytes, config);
  if (!samples.ok()) return 0;
  for (int64_t i = 0; i < samples->size(); ++i) {
    const accumulus::data::TokenSpan span = (*samples)[i];
    FUZZ_CHECK(span.length >= 2 && span.length <= config.sequence_length + 1);
    FUZZ_CHECK(span.begin >= 0 && span.begin + span.length <= tokens);
    if (config.blocks) continue;
    for (int64_t t = span.begin; t < span.begin + span.length; ++t) {
      const int64_t id = accumulus::data::TokenAt(bytes, config.width, t);
      FUZZ_CHECK(id != config.separator);
      if (largest.ok()) FUZZ_CHECK(id <= *largest);
    }
  }
  return 0;
}
