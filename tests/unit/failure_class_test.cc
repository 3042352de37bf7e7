// How a failure is classed for programs: by what the failing code said it
// was about, else by its status code.
#include "common/failure_class.h"

#include <gtest/gtest.h>

namespace accumulus {
namespace {

// The same code, two classes: what the failure was about decides.
TEST(FailureClass, TheFaultOutranksTheCode) {
  const Status bad_csv = Status::InvalidArgument("data.csv:3: column 2: expected a number");
  EXPECT_EQ(FailureClassOf(bad_csv), v1::FAILURE_CLASS_BAD_SPEC);
  EXPECT_EQ(FailureClassOf(bad_csv.WithFault(Fault::kData)), v1::FAILURE_CLASS_BAD_DATA);
  const Status full = Status::ResourceExhausted("cannot write ckpt: No space left on device");
  EXPECT_EQ(FailureClassOf(full), v1::FAILURE_CLASS_OUT_OF_MEMORY);
  EXPECT_EQ(FailureClassOf(full.WithFault(Fault::kStorage)), v1::FAILURE_CLASS_STORAGE);
  EXPECT_EQ(FailureClassOf(Status::Internal("x").WithFault(Fault::kPeers)),
            v1::FAILURE_CLASS_COLLECTIVE);
  EXPECT_EQ(FailureClassOf(Status::Internal("x").WithFault(Fault::kMemory)),
            v1::FAILURE_CLASS_OUT_OF_MEMORY);
  EXPECT_EQ(FailureClassOf(Status::Internal("x").WithFault(Fault::kSpec)),
            v1::FAILURE_CLASS_BAD_SPEC);
}

TEST(FailureClass, UnclassifiedFailuresGoByTheirCode) {
  EXPECT_EQ(FailureClassOf(Status::Unavailable("rendezvous failed")), v1::FAILURE_CLASS_COLLECTIVE);
  EXPECT_EQ(FailureClassOf(Status(StatusCode::kDeadlineExceeded, "late")),
            v1::FAILURE_CLASS_COLLECTIVE);
  EXPECT_EQ(FailureClassOf(Status::DataLoss("checkpoint frame truncated")),
            v1::FAILURE_CLASS_STORAGE);
  EXPECT_EQ(FailureClassOf(Status::Internal("LibTorch: ...")), v1::FAILURE_CLASS_INTERNAL);
}

TEST(FailureClass, WithFaultLeavesOkAlone) {
  EXPECT_EQ(Status::Ok().WithFault(Fault::kData).fault(), Fault::kUnclassified);
  EXPECT_EQ(Status::Internal("x").WithFault(Fault::kData).WithContext("ctx").fault(), Fault::kData)
      << "context keeps the fault";
}

}  // namespace
}  // namespace accumulus
