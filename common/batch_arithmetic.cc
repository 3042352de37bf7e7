#include "common/batch_arithmetic.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace accumulus {
namespace {

std::string Field(const char* name, int64_t value) {
  return std::string(name) + " " + std::to_string(value);
}

Status CheckNotNegative(const char* name, int64_t value) {
  if (value < 0) return Status::InvalidArgument(Field(name, value) + " must not be negative");
  return Status::Ok();
}

// a × b, or nullopt when the product does not fit in int64.
std::optional<int64_t> Multiply(int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

Status Overflow(const BatchRequest& r, int64_t devices) {
  return Status::InvalidArgument("micro_batch " + std::to_string(r.micro_batch) +
                                 " × accumulation_steps " + std::to_string(r.accumulation_steps) +
                                 " × devices " + std::to_string(devices) + " overflows");
}

}  // namespace

StatusOr<BatchSizes> ResolveBatch(const BatchRequest& r) {
  for (Status s : {CheckNotNegative("global_batch", r.global_batch),
                   CheckNotNegative("micro_batch", r.micro_batch),
                   CheckNotNegative("accumulation_steps", r.accumulation_steps),
                   CheckNotNegative("devices", r.devices)}) {
    if (!s.ok()) return s;
  }
  const int64_t devices = r.devices == 0 ? 1 : r.devices;
  const bool has_global = r.global_batch > 0;
  const bool has_micro = r.micro_batch > 0;
  const bool has_accum = r.accumulation_steps > 0;
  if (has_global + has_micro + has_accum < 2) {
    return Status::InvalidArgument(
        "give two of global_batch, micro_batch and accumulation_steps (got " +
        Field("global_batch", r.global_batch) + ", " + Field("micro_batch", r.micro_batch) + ", " +
        Field("accumulation_steps", r.accumulation_steps) +
        "); for no accumulation set accumulation_steps 1");
  }

  BatchSizes out;
  out.devices = devices;
  const std::string devices_text = " × devices " + std::to_string(devices);
  if (has_micro && has_accum) {
    auto per_device = Multiply(r.micro_batch, r.accumulation_steps);
    auto global = per_device ? Multiply(*per_device, devices) : std::nullopt;
    if (!global) return Overflow(r, devices);
    if (has_global && *global != r.global_batch) {
      return Status::InvalidArgument(Field("global_batch", r.global_batch) + " does not equal " +
                                     Field("micro_batch", r.micro_batch) + " × " +
                                     Field("accumulation_steps", r.accumulation_steps) +
                                     devices_text + " = " + std::to_string(*global));
    }
    out.micro_batch = r.micro_batch;
    out.accumulation_steps = r.accumulation_steps;
    out.global_batch = *global;
    return out;
  }

  // The global batch and one factor are given: the other factor is derived.
  const char* given_name = has_micro ? "micro_batch" : "accumulation_steps";
  const int64_t given = has_micro ? r.micro_batch : r.accumulation_steps;
  auto divisor = Multiply(given, devices);
  if (!divisor || r.global_batch % *divisor != 0) {
    return Status::InvalidArgument(Field("global_batch", r.global_batch) + " is not divisible by " +
                                   Field(given_name, given) + devices_text);
  }
  const int64_t derived = r.global_batch / *divisor;
  out.micro_batch = has_micro ? r.micro_batch : derived;
  out.accumulation_steps = has_micro ? derived : r.accumulation_steps;
  out.global_batch = r.global_batch;
  return out;
}

int64_t NominalAccumulation(int64_t nominal_batch, int64_t micro_batch, int64_t devices,
                            int64_t step, int64_t warmup_steps) {
  const double target =
      static_cast<double>(nominal_batch) / static_cast<double>(micro_batch * devices);
  const int64_t full = std::max<int64_t>(1, std::llrint(target));
  if (warmup_steps <= 0 || step >= warmup_steps) return full;
  // np.interp(step, [0, warmup], [1, target]).round()
  const double ramp =
      1.0 + (target - 1.0) * static_cast<double>(step) / static_cast<double>(warmup_steps);
  return std::max<int64_t>(1, std::llrint(ramp));
}

double NominalWeightDecay(double weight_decay, int64_t nominal_batch, int64_t micro_batch,
                          int64_t devices, int64_t accumulation) {
  return weight_decay * static_cast<double>(micro_batch * devices * accumulation) /
         static_cast<double>(nominal_batch);
}

int64_t LargestDivisorAtMost(int64_t n, int64_t bound) {
  for (int64_t d = std::min(n, bound); d > 1; --d) {
    if (n % d == 0) return d;
  }
  return 1;
}

}  // namespace accumulus
