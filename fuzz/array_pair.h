// What the IDX and .npy fuzz targets share: samples and labels cut from the
// same bytes and read by one format's parser; a parsed array's data lies
// inside the file, its values are finite, accepted labels are classes and
// accepted targets are whole per sample.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/data/numeric_array.h"
#include "fuzz/fuzz_check.h"

namespace accumulus::fuzz {

inline void FuzzArrayPair(data::ArrayParser parse, const uint8_t* data, size_t size) {
  if (size < 2) return;
  const size_t cut = 1 + data[0] % (size - 1);
  const int64_t declared = data[1] % 12;
  const std::string samples_bytes(reinterpret_cast<const char*>(data) + 1, cut - 1);
  const std::string label_bytes(reinterpret_cast<const char*>(data) + cut, size - cut);
  StatusOr<data::NumericArray> samples = parse("data.path", "s", samples_bytes);
  StatusOr<data::NumericArray> labels = parse("data.labels_path", "l", label_bytes);
  for (const auto* parsed : {&samples, &labels}) {
    if (!parsed->ok()) FUZZ_CHECK(parsed->status().message().size() < 512);
  }
  if (!samples.ok() || !labels.ok()) return;
  FUZZ_CHECK(samples->OffsetOf(samples->count) == samples_bytes.size());
  FUZZ_CHECK(samples->dims.size() >= 1);
  for (int64_t i = 0; i < samples->count; ++i) {
    FUZZ_CHECK(!std::isnan((*samples)[i]));
    if (data::IsFloatingPoint(samples->type)) {
      FUZZ_CHECK(std::isfinite(static_cast<float>((*samples)[i])));
    }
  }
  StatusOr<int64_t> targets = data::CheckTargets(*labels, samples->dims[0], "l", "s");
  if (targets.ok()) FUZZ_CHECK(*targets >= 1 && labels->count == samples->dims[0] * *targets);
  StatusOr<data::ClassLabels> classes =
      data::CheckClassLabels(*labels, samples->dims[0], "l", "s", declared);
  if (!classes.ok()) return;
  if (declared > 0) FUZZ_CHECK(classes->classes == declared);
  if (classes->one_hot) {
    // Rows of one 1 and zeros, as wide as the classes.
    FUZZ_CHECK(labels->dims.size() == 2 && labels->dims[1] == classes->classes);
    double ones = 0;
    for (int64_t i = 0; i < labels->count; ++i) {
      const double y = (*labels)[i];
      FUZZ_CHECK(y == 0 || y == 1);
      ones += y;
    }
    FUZZ_CHECK(ones == static_cast<double>(samples->dims[0]));
    return;
  }
  FUZZ_CHECK(labels->count == samples->dims[0]);
  for (int64_t i = 0; i < labels->count; ++i) {
    const double y = (*labels)[i];
    FUZZ_CHECK(y >= 0 && y == std::floor(y) && y < static_cast<double>(classes->classes));
  }
}

}  // namespace accumulus::fuzz
