// Which thread counts a trainer rank is given: the spec's, else the worker's,
// else none (the rank measures its split).
#include "common/rank_threads.h"

#include <gtest/gtest.h>

namespace accumulus {
namespace {

v1::ThreadSpec Spec(int intra_op, int blas) {
  v1::ThreadSpec spec;
  spec.set_intra_op(intra_op);
  spec.set_blas(blas);
  return spec;
}

TEST(ResolveRankThreads, NothingGivenLeavesTheSplitToTheRank) {
  const RankThreads t = ResolveRankThreads(Spec(0, 0), 0, 0, 4);
  EXPECT_TRUE(t.rank_measures());
  EXPECT_EQ(t.cores, 4);
}

TEST(ResolveRankThreads, TheSpecWinsOverTheWorker) {
  const RankThreads t = ResolveRankThreads(Spec(3, 2), 1, 1, 4);
  EXPECT_FALSE(t.rank_measures());
  EXPECT_EQ(t.intra_op, 3);
  EXPECT_EQ(t.blas, 2);
}

TEST(ResolveRankThreads, OneCountGivenLeavesTheOtherTheCoresItDoesNotTake) {
  RankThreads t = ResolveRankThreads(Spec(0, 0), 4, 0, 4);
  EXPECT_EQ(t.intra_op, 4);
  EXPECT_EQ(t.blas, 1);
  t = ResolveRankThreads(Spec(0, 4), 0, 0, 4);
  EXPECT_EQ(t.intra_op, 1);
  EXPECT_EQ(t.blas, 4);
  t = ResolveRankThreads(Spec(2, 0), 0, 0, 4);
  EXPECT_EQ(t.intra_op, 2);
  EXPECT_EQ(t.blas, 2);
}

TEST(ResolveRankThreads, ASlotWithoutACoreCountStillHasOne) {
  EXPECT_EQ(ResolveRankThreads(Spec(0, 0), 0, 0, 0).cores, 1);
}

}  // namespace
}  // namespace accumulus
