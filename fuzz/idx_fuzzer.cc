// The IDX reader: samples and labels cut from the same bytes; a parsed
// array's data lies inside the file, its values are finite, accepted labels
// are classes and accepted targets are whole per sample.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/data/idx_array.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t cut = 1 + data[0] % (size - 1);
  const int64_t declared = data[1] % 12;
  const std::string samples_bytes(reinterpret_cast<const char*>(data) + 1, cut - 1);
  const std::string label_bytes(reinterpret_cast<const char*>(data) + cut, size - cut);
  auto samples = accumulus::data::ParseIdx("data.path", "s.idx", samples_bytes);
  auto labels = accumulus::data::ParseIdx("data.labels_path", "l.idx", label_bytes);
  if (!samples.ok() || !labels.ok()) return 0;
  FUZZ_CHECK(samples->OffsetOf(samples->count) == samples_bytes.size());
  FUZZ_CHECK(samples->dims.size() >= 1);
  for (int64_t i = 0; i < samples->count; ++i) {
    FUZZ_CHECK(std::isfinite(static_cast<float>((*samples)[i])));
  }
  accumulus::StatusOr<int64_t> targets =
      accumulus::data::CheckIdxTargets(*labels, samples->dims[0], "l.idx", "s.idx");
  if (targets.ok()) FUZZ_CHECK(*targets >= 1 && labels->count == samples->dims[0] * *targets);
  accumulus::StatusOr<int64_t> classes =
      accumulus::data::CheckIdxLabels(*labels, samples->dims[0], "l.idx", "s.idx", declared);
  if (!classes.ok()) return 0;
  for (int64_t i = 0; i < labels->count; ++i) {
    const double y = (*labels)[i];
    FUZZ_CHECK(y >= 0 && y == std::floor(y) && y < static_cast<double>(*classes));
  }
  if (declared > 0) FUZZ_CHECK(*classes == declared);
  return 0;
}
