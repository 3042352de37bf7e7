#include "common/step_plan.h"

#include <gtest/gtest.h>

namespace accumulus {
namespace {

TEST(PlanSteps, CountsAShortLastWindowAsAStep) {
  const StepPlan plan = PlanSteps(/*samples=*/36, /*global_batch=*/32, /*epochs=*/3, 0);
  EXPECT_EQ(plan.steps_per_epoch, 2);
  EXPECT_EQ(plan.steps_total, 6);
}

TEST(PlanSteps, ExactDivisionHasNoExtraStep) {
  const StepPlan plan = PlanSteps(8192, 256, 2, 0);
  EXPECT_EQ(plan.steps_per_epoch, 32);
  EXPECT_EQ(plan.steps_total, 64);
}

TEST(PlanSteps, MaxStepsCapsEpochs) {
  EXPECT_EQ(PlanSteps(8192, 256, 10, 50).steps_total, 50);
  EXPECT_EQ(PlanSteps(8192, 256, 1, 50).steps_total, 32);
}

TEST(PlanSteps, MaxStepsAloneRunsAcrossEpochs) {
  EXPECT_EQ(PlanSteps(100, 32, 0, 9).steps_total, 9);
}

}  // namespace
}  // namespace accumulus
