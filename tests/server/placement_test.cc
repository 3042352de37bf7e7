// Gang placement: all ranks or none, on as few workers as possible, leaving
// the larger holes for larger jobs; ranks in order, deterministic on ties.
#include "server/placement.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace accumulus::server {
namespace {

// "w1:0 w1:2 w2:0": where each rank went, in rank order.
std::string Where(const std::optional<std::vector<RankSlot>>& ranks) {
  if (!ranks) return "nowhere";
  std::string out;
  for (const RankSlot& r : *ranks) {
    out += (out.empty() ? "" : " ") + r.worker_id + ":" + std::to_string(r.slot);
  }
  return out;
}

TEST(Placement, AJobThatFitsOnOneWorkerTakesTheFullestThatHoldsIt) {
  const std::vector<WorkerSlots> workers{{"w1", {0, 1, 2, 3}}, {"w2", {1, 3}}, {"w3", {0}}};
  EXPECT_EQ(Where(PlaceRanks(2, workers)), "w2:1 w2:3") << "w1's four stay together";
  EXPECT_EQ(Where(PlaceRanks(1, workers)), "w3:0");
  EXPECT_EQ(Where(PlaceRanks(3, workers)), "w1:0 w1:1 w1:2");
}

TEST(Placement, TiesGoToTheWorkerFirstByIdWhateverTheOrderGiven) {
  EXPECT_EQ(Where(PlaceRanks(2, {{"w2", {0, 1}}, {"w1", {4, 5}}})), "w1:4 w1:5");
  EXPECT_EQ(Where(PlaceRanks(3, {{"b", {0, 1}}, {"a", {0, 1}}, {"c", {0}}})), "a:0 a:1 b:0");
}

TEST(Placement, ALargerJobSpansTheFewestWorkersEmptiestFirst) {
  const std::vector<WorkerSlots> workers{{"w1", {0}}, {"w2", {0, 1, 2}}, {"w3", {0, 1}}};
  EXPECT_EQ(Where(PlaceRanks(5, workers)), "w2:0 w2:1 w2:2 w3:0 w3:1");
  const auto all = PlaceRanks(6, workers);
  ASSERT_TRUE(all.has_value());
  std::set<std::string> distinct;
  for (const RankSlot& r : *all) distinct.insert(r.worker_id + ":" + std::to_string(r.slot));
  EXPECT_EQ(distinct.size(), 6u) << "no slot twice";
}

TEST(Placement, AllOrNothing) {
  EXPECT_EQ(Where(PlaceRanks(4, {{"w1", {0, 1}}, {"w2", {0}}})), "nowhere");
  EXPECT_EQ(Where(PlaceRanks(1, {})), "nowhere");
  EXPECT_EQ(Where(PlaceRanks(1, {{"w1", {}}})), "nowhere");
}

}  // namespace
}  // namespace accumulus::server
