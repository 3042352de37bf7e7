// The .npy reader (fuzz/array_pair.h says what holds).
#include <cstddef>
#include <cstdint>

#include "common/data/npy_array.h"
#include "fuzz/array_pair.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  accumulus::fuzz::FuzzArrayPair(&accumulus::data::ParseNpy, data, size);
  return 0;
}
