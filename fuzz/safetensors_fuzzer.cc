// The safetensors reader: whatever the header says, each tensor it lets
// through reads within the file, as many elements as its shape, and every
// other is refused in words.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/data/safetensors_file.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accumulus::data;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto file = SafetensorsFile::Parse("data.path", "f.safetensors", bytes);
  if (!file.ok()) return 0;
  for (const SafetensorsTensor& t : file->tensors()) {
    FUZZ_CHECK(t.begin <= t.end && t.end <= size);
    const auto array = file->Array("data.array", t.name);
    if (!array.ok()) continue;
    FUZZ_CHECK(array->data_offset == t.begin);
    FUZZ_CHECK(array->data_offset + static_cast<size_t>(array->count) * ElementSize(array->type) ==
               t.end);
    for (int64_t i = 0; i < array->count; ++i) (void)(*array)[i];
  }
  (void)file->Array("data.array", "");
  return 0;
}
