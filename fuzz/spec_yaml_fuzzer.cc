// A job spec as YAML, end to end as the CLI and the controller read it:
// parse, validate, resolve the batch, count the steps, plan each device
// count of an elastic job. Whatever the bytes, nothing crashes, hangs or
// grows without bound, and what is accepted keeps the batch arithmetic.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/job_spec.h"
#include "common/spec_yaml.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  accumulus::StatusOr<accumulus::v1::JobSpec> spec = accumulus::ParseJobSpecYaml(yaml, "fuzz.yaml");
  if (!spec.ok()) {
    FUZZ_CHECK(spec.status().message().rfind("fuzz.yaml", 0) == 0);  // names the file
    return 0;
  }
  accumulus::StatusOr<accumulus::v1::JobSpec> normalized = accumulus::NormalizeJobSpec(*spec);
  if (!normalized.ok()) {
    FUZZ_CHECK(!normalized.status().field_violations().empty());
    return 0;
  }
  accumulus::StatusOr<accumulus::v1::BatchPlan> plan = accumulus::ResolveBatchPlan(*normalized);
  FUZZ_CHECK(plan.ok());  // a normalized spec has a plan
  if (plan->micro_batch() > 0) {
    FUZZ_CHECK(plan->global_batch() ==
               plan->micro_batch() * plan->accumulation_steps() * plan->devices());
  }
  FUZZ_CHECK(accumulus::TotalSteps(*normalized, *plan) >= 0);
  for (int32_t d = normalized->min_devices(); d > 0 && d <= normalized->devices(); ++d) {
    accumulus::StatusOr<accumulus::v1::BatchPlan> on =
        accumulus::PlanForDevices(*normalized, *plan, d);
    if (on.ok()) FUZZ_CHECK(on->global_batch() == plan->global_batch());
  }
  return 0;
}
