#include "client/noise_advice.h"

#include <cmath>
#include <cstdio>

namespace accumulus::client {
namespace {

// Within this factor either way, the batch is "near" the noise scale.
constexpr double kNear = 2.0;

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

}  // namespace

std::string HumanCount(double count) {
  if (count >= 1e9) return Format("%.3gG", count / 1e9);
  if (count >= 1e6) return Format("%.3gM", count / 1e6);
  if (count >= 1e3) return Format("%.3gk", count / 1e3);
  return Format("%.3g", count);
}

std::string NoiseScaleAdvice(const v1::BatchPlan& batch, const v1::StepMetrics& step) {
  const v1::NoiseScale& noise = step.noise();
  if (!(noise.noise_scale() > 0) || batch.global_batch() <= 0) return "";
  const bool tokens = noise.tokens() && step.tokens() > 0 && step.samples() > 0;
  // The noise scale in samples, to compare with the global batch.
  const double items_per_sample =
      tokens ? static_cast<double>(step.tokens()) / static_cast<double>(step.samples()) : 1.0;
  const double noise_samples = noise.noise_scale() / items_per_sample;
  const double global = static_cast<double>(batch.global_batch());
  const double ratio = global / noise_samples;
  const std::string unit = tokens ? " tokens" : " samples";
  std::string text = "global batch " + std::to_string(batch.global_batch()) +
                     (tokens ? " (" + HumanCount(global * items_per_sample) + " tokens)" : "") +
                     " is " + Format("%.2g", ratio) + "× the measured noise scale " +
                     HumanCount(noise.noise_scale()) + unit;
  const int64_t per_accumulation = static_cast<int64_t>(batch.micro_batch()) * batch.devices();
  if (per_accumulation <= 0) return text;
  const int64_t wanted =
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(noise_samples / per_accumulation)));
  const std::string split =
      "accumulation " + std::to_string(wanted) + " at micro " +
      std::to_string(batch.micro_batch()) +
      (batch.devices() > 1 ? " × " + std::to_string(batch.devices()) + " devices" : "");
  if (ratio < 1 / kNear) return text + ": " + split + " would reach it";
  if (ratio > kNear) {
    return text + ": steps this large gain little over smaller ones; " + split + " would match it";
  }
  return text + ": near it, where a step's samples are used best";
}

}  // namespace accumulus::client
