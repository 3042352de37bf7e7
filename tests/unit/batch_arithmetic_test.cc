#include "common/batch_arithmetic.h"

#include <gtest/gtest.h>

namespace accumulus {
namespace {

struct Derivation {
  const char* name;
  BatchRequest request;
  BatchSizes expected;
};

class BatchDerivationTest : public ::testing::TestWithParam<Derivation> {};

TEST_P(BatchDerivationTest, DerivesTheMissingFactor) {
  const Derivation& d = GetParam();
  StatusOr<BatchSizes> sizes = ResolveBatch(d.request);
  ASSERT_TRUE(sizes.ok()) << sizes.status().ToString();
  EXPECT_EQ(sizes->micro_batch, d.expected.micro_batch);
  EXPECT_EQ(sizes->accumulation_steps, d.expected.accumulation_steps);
  EXPECT_EQ(sizes->devices, d.expected.devices);
  EXPECT_EQ(sizes->global_batch, d.expected.global_batch);
  EXPECT_EQ(sizes->global_batch, sizes->micro_batch * sizes->accumulation_steps * sizes->devices);
}

INSTANTIATE_TEST_SUITE_P(
    AllDerivations, BatchDerivationTest,
    ::testing::Values(
        // {global, micro, accumulation, devices} → {micro, accumulation, devices, global}
        Derivation{"MicroAndAccumulation", {0, 8, 4, 1}, {8, 4, 1, 32}},
        Derivation{"MicroAndAccumulationOnDevices", {0, 4, 8, 4}, {4, 8, 4, 128}},
        Derivation{"GlobalAndMicro", {256, 64, 0, 1}, {64, 4, 1, 256}},
        Derivation{"GlobalAndMicroOnDevices", {256, 16, 0, 2}, {16, 8, 2, 256}},
        Derivation{"GlobalAndAccumulation", {256, 0, 4, 1}, {64, 4, 1, 256}},
        Derivation{"GlobalAndAccumulationOnDevices", {96, 0, 3, 4}, {8, 3, 4, 96}},
        Derivation{"AllThreeConsistent", {64, 8, 4, 2}, {8, 4, 2, 64}},
        Derivation{"DevicesZeroMeansOne", {32, 8, 0, 0}, {8, 4, 1, 32}},
        Derivation{"NoAccumulation", {0, 32, 1, 1}, {32, 1, 1, 32}},
        Derivation{"GlobalEqualsMicro", {32, 32, 0, 1}, {32, 1, 1, 32}}),
    [](const auto& info) { return info.param.name; });

struct Rejection {
  const char* name;
  BatchRequest request;
  const char* message;  // the whole message: fields and values named
};

class BatchRejectionTest : public ::testing::TestWithParam<Rejection> {};

TEST_P(BatchRejectionTest, RejectsWithFieldsAndValues) {
  const Rejection& r = GetParam();
  StatusOr<BatchSizes> sizes = ResolveBatch(r.request);
  ASSERT_FALSE(sizes.ok());
  EXPECT_EQ(sizes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sizes.status().message(), r.message);
}

INSTANTIATE_TEST_SUITE_P(
    AllRejections, BatchRejectionTest,
    ::testing::Values(
        Rejection{"GlobalNotDivisibleByMicroTimesDevices",
                  {100, 8, 0, 2},
                  "global_batch 100 is not divisible by micro_batch 8 × devices 2"},
        Rejection{"GlobalNotDivisibleByAccumulationTimesDevices",
                  {100, 0, 3, 1},
                  "global_batch 100 is not divisible by accumulation_steps 3 × devices 1"},
        Rejection{"GlobalSmallerThanMicroTimesDevices",
                  {8, 16, 0, 1},
                  "global_batch 8 is not divisible by micro_batch 16 × devices 1"},
        Rejection{"ThreeInconsistent",
                  {100, 8, 4, 2},
                  "global_batch 100 does not equal micro_batch 8 × accumulation_steps 4 × "
                  "devices 2 = 64"},
        Rejection{"OnlyMicro",
                  {0, 8, 0, 1},
                  "give two of global_batch, micro_batch and accumulation_steps (got "
                  "global_batch 0, micro_batch 8, accumulation_steps 0); for no accumulation "
                  "set accumulation_steps 1"},
        Rejection{"OnlyGlobal",
                  {64, 0, 0, 1},
                  "give two of global_batch, micro_batch and accumulation_steps (got "
                  "global_batch 64, micro_batch 0, accumulation_steps 0); for no accumulation "
                  "set accumulation_steps 1"},
        Rejection{"Nothing",
                  {0, 0, 0, 0},
                  "give two of global_batch, micro_batch and accumulation_steps (got "
                  "global_batch 0, micro_batch 0, accumulation_steps 0); for no accumulation "
                  "set accumulation_steps 1"},
        Rejection{"NegativeGlobal", {-32, 8, 0, 1}, "global_batch -32 must not be negative"},
        Rejection{"NegativeMicro", {0, -8, 4, 1}, "micro_batch -8 must not be negative"},
        Rejection{
            "NegativeAccumulation", {0, 8, -4, 1}, "accumulation_steps -4 must not be negative"},
        Rejection{"NegativeDevices", {0, 8, 4, -1}, "devices -1 must not be negative"},
        Rejection{"ProductOverflows",
                  {0, INT64_C(1) << 40, INT64_C(1) << 30, 1},
                  "micro_batch 1099511627776 × accumulation_steps 1073741824 × devices 1 "
                  "overflows"},
        Rejection{"ProductOverflowsOnlyWithDevices",
                  {0, INT64_C(1) << 31, INT64_C(1) << 31, 4},
                  "micro_batch 2147483648 × accumulation_steps 2147483648 × devices 4 "
                  "overflows"},
        Rejection{"DivisorOverflows",
                  {INT64_C(1) << 62, INT64_C(1) << 62, 0, 8},
                  "global_batch 4611686018427387904 is not divisible by micro_batch "
                  "4611686018427387904 × devices 8"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace accumulus
