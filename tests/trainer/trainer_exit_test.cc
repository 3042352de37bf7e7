// The trainer's last word: state, reason, permanence and failure class.
#include "worker/trainer/trainer_exit.h"

#include <gtest/gtest.h>

namespace accumulus::trainer {
namespace {

TEST(TrainerExit, SuccessHasNoFailureClass) {
  const v1::TrainerExit exit = TrainerExitFor(Status::Ok());
  EXPECT_EQ(exit.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(exit.failure_class(), v1::FAILURE_CLASS_UNSPECIFIED);
  EXPECT_FALSE(exit.permanent());
}

TEST(TrainerExit, AStopOnRequestIsCancelled) {
  const v1::TrainerExit exit = TrainerExitFor(Status::Cancelled("stop requested"));
  EXPECT_EQ(exit.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(exit.reason(), "stop requested");
  EXPECT_EQ(exit.failure_class(), v1::FAILURE_CLASS_CANCELLED);
}

TEST(TrainerExit, PermanenceFollowsTheCodeNotTheFault) {
  // A collective that failed may pass on a retry; a bad file will not.
  EXPECT_FALSE(
      TrainerExitFor(Status::Unavailable("peer gone").WithFault(Fault::kPeers)).permanent());
  EXPECT_TRUE(TrainerExitFor(Status::InvalidArgument("bad").WithFault(Fault::kData)).permanent());
  EXPECT_FALSE(TrainerExitFor(Status::Internal("LibTorch: ...")).permanent());
  const v1::TrainerExit failed = TrainerExitFor(Status::NotFound("data.path x: cannot open"));
  EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(failed.reason(), "NOT_FOUND: data.path x: cannot open");
}

}  // namespace
}  // namespace accumulus::trainer
