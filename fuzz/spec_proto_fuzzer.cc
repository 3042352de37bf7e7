// A job spec as raw protobuf, as a client that is not the CLI may send it
// (NaN and infinities, huge strings, unknown fields): validation never
// crashes, and what it accepts it accepts again unchanged (normalizing is
// idempotent).
#include <google/protobuf/util/message_differencer.h>

#include <cstddef>
#include <cstdint>

#include "common/job_spec.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  accumulus::v1::JobSpec spec;
  if (!spec.ParseFromArray(data, static_cast<int>(size))) return 0;
  accumulus::StatusOr<accumulus::v1::JobSpec> normalized = accumulus::NormalizeJobSpec(spec);
  if (!normalized.ok()) {
    FUZZ_CHECK(normalized.status().message().size() < 64 * 1024);  // bounded
    return 0;
  }
  accumulus::StatusOr<accumulus::v1::JobSpec> again = accumulus::NormalizeJobSpec(*normalized);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(*again, *normalized));
  accumulus::StatusOr<accumulus::v1::BatchPlan> plan = accumulus::ResolveBatchPlan(*normalized);
  FUZZ_CHECK(plan.ok());
  FUZZ_CHECK(accumulus::TotalSteps(*normalized, *plan) >= 0);
  return 0;
}
