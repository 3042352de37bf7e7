// The checkpoint frame: any file is read back whole or refused as data
// loss, and a framed payload reads back as itself.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/checkpoint_frame.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  accumulus::StatusOr<std::string> payload = accumulus::UnframeCheckpoint(bytes);
  if (payload.ok()) {
    FUZZ_CHECK(accumulus::FrameCheckpoint(*payload) == bytes);
  } else {
    FUZZ_CHECK(payload.status().code() == accumulus::StatusCode::kDataLoss);
  }
  accumulus::StatusOr<std::string> round_trip =
      accumulus::UnframeCheckpoint(accumulus::FrameCheckpoint(bytes));
  FUZZ_CHECK(round_trip.ok() && *round_trip == bytes);
  return 0;
}
