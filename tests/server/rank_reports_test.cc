// The step ingest's bookkeeping on its own: a resent event is known by its
// rank's sequence number alone (per attempt and rank), a data-parallel step
// is one event once every rank's report is in, and a report waiting for the
// others holds its worker message's acknowledgement back until it is merged
// or its attempt ends.
#include "server/rank_reports.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace accumulus::server {
namespace {

v1::JobEvent StepReport(int32_t rank, int64_t step, int64_t rank_sequence, double loss) {
  v1::JobEvent event;
  event.set_rank(rank);
  event.set_rank_sequence(rank_sequence);
  event.mutable_step()->set_rank(rank);
  event.mutable_step()->set_step(step);
  event.mutable_step()->set_loss(loss);
  event.mutable_step()->set_samples(10 + rank);
  return event;
}

TEST(RankReports, AnEventIsNewOnceByItsRanksNumberWithinItsAttempt) {
  RankReports reports;
  EXPECT_TRUE(reports.TakeNew("job-1", 1, 0, 1));
  EXPECT_TRUE(reports.TakeNew("job-1", 1, 0, 2));
  EXPECT_FALSE(reports.TakeNew("job-1", 1, 0, 2)) << "resent";
  EXPECT_FALSE(reports.TakeNew("job-1", 1, 0, 1)) << "resent, older";
  EXPECT_TRUE(reports.TakeNew("job-1", 1, 1, 1)) << "another rank counts on its own";
  EXPECT_TRUE(reports.TakeNew("job-1", 2, 0, 1)) << "a new attempt's trainer starts again at 1";
  EXPECT_TRUE(reports.TakeNew("job-2", 1, 0, 1)) << "another job";
  EXPECT_TRUE(reports.TakeNew("job-1", 1, 0, 0)) << "unnumbered: always taken";
  EXPECT_TRUE(reports.TakeNew("job-1", 1, 0, 0));
}

TEST(RankReports, StoredEventsAreKnownAfterARestartIncludingEachMergedRanksNumber) {
  RankReports reports;
  v1::JobEvent merged;
  merged.set_attempt(3);
  merged.mutable_step()->set_step(7);
  for (int32_t rank = 0; rank < 2; ++rank) {
    v1::RankStepMetrics* r = merged.mutable_step()->add_ranks();
    r->set_rank(rank);
    r->set_rank_sequence(20 + rank);
  }
  v1::JobEvent log;
  log.set_attempt(3);
  log.set_rank(0);
  log.set_rank_sequence(22);
  reports.NoteStored("job-1", merged);
  reports.NoteStored("job-1", log);
  EXPECT_FALSE(reports.TakeNew("job-1", 3, 0, 22));
  EXPECT_FALSE(reports.TakeNew("job-1", 3, 1, 21));
  EXPECT_TRUE(reports.TakeNew("job-1", 3, 1, 22));
  EXPECT_TRUE(reports.TakeNew("job-1", 3, 0, 23));
}

TEST(RankReports, ADataParallelStepIsMergedOnceEveryRankReportedInRankOrder) {
  RankReports reports;
  EXPECT_FALSE(reports.Merge("job-1", 3, "w2", 5, StepReport(2, 1, 4, 0.2)).has_value());
  EXPECT_FALSE(reports.Merge("job-1", 3, "w1", 9, StepReport(0, 1, 4, 0.5)).has_value());
  EXPECT_FALSE(reports.Merge("job-1", 3, "w1", 9, StepReport(0, 2, 5, 0.4)).has_value())
      << "the next step waits on its own";
  std::optional<v1::JobEvent> merged = reports.Merge("job-1", 3, "w2", 6, StepReport(1, 1, 7, 0.3));
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(merged->step().step(), 1);
  EXPECT_DOUBLE_EQ(merged->step().loss(), 0.5) << "rank 0's (global) loss";
  EXPECT_EQ(merged->rank_sequence(), 0) << "each rank's number is in ranks[]";
  ASSERT_EQ(merged->step().ranks_size(), 3);
  for (int32_t rank = 0; rank < 3; ++rank) {
    const v1::RankStepMetrics& r = merged->step().ranks(rank);
    EXPECT_EQ(r.rank(), rank);
    EXPECT_EQ(r.samples(), 10 + rank);
  }
  EXPECT_EQ(merged->step().ranks(0).worker_id(), "w1");
  EXPECT_EQ(merged->step().ranks(1).worker_id(), "w2");
  EXPECT_EQ(merged->step().ranks(1).rank_sequence(), 7);
  EXPECT_EQ(merged->step().ranks(2).rank_sequence(), 4);
}

TEST(RankReports, AWaitingReportHoldsItsMessagesAcknowledgementBack) {
  RankReports reports;
  EXPECT_EQ(reports.AcknowledgeableUpTo("w1", 10), 10u) << "nothing waits";
  reports.Merge("job-1", 2, "w1", 4, StepReport(0, 1, 1, 0.5));
  EXPECT_EQ(reports.AcknowledgeableUpTo("w1", 10), 3u) << "message 4 is not durable yet";
  EXPECT_EQ(reports.AcknowledgeableUpTo("w1", 2), 2u);
  EXPECT_EQ(reports.AcknowledgeableUpTo("w2", 10), 10u) << "another worker's messages";
  reports.Merge("job-1", 2, "w1", 6, StepReport(0, 2, 2, 0.4));
  reports.Merge("job-1", 2, "w2", 8, StepReport(1, 1, 1, 0.5));  // step 1 complete
  EXPECT_EQ(reports.AcknowledgeableUpTo("w1", 10), 5u) << "step 2's report still waits";
  EXPECT_EQ(reports.AcknowledgeableUpTo("w2", 10), 10u);
}

TEST(RankReports, AnEndedAttemptsWaitingReportsHoldNothingBack) {
  RankReports reports;
  ASSERT_TRUE(reports.TakeNew("job-2", 1, 0, 1));
  reports.Merge("job-1", 2, "w1", 4, StepReport(0, 1, 1, 0.5));
  reports.Merge("job-2", 2, "w1", 5, StepReport(0, 1, 1, 0.5));
  reports.DropPending("job-1");
  EXPECT_EQ(reports.AcknowledgeableUpTo("w1", 10), 4u) << "job-2's still waits";
  reports.Forget("job-2");
  EXPECT_EQ(reports.AcknowledgeableUpTo("w1", 10), 10u);
  EXPECT_TRUE(reports.TakeNew("job-2", 1, 0, 1)) << "a forgotten job's numbers are gone";
  // A new report of the dropped step starts a merge of its own.
  EXPECT_FALSE(reports.Merge("job-1", 2, "w1", 11, StepReport(0, 1, 1, 0.5)).has_value());
}

}  // namespace
}  // namespace accumulus::server
