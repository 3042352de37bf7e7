// A test that hangs, run by HangWatchdog's end-to-end test (never by ctest):
// it watches a job that no worker will ever run, so the watch never ends
// unless something kills it.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/support/job_specs.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

TEST(HangTarget, WatchesAJobThatNeverStarts) {
  TestCluster cluster;
  const std::string id = SubmitJob(cluster, "never.yaml", LongMlpJob(1));
  ASSERT_FALSE(id.empty());
  std::unique_ptr<Subprocess> watch = cluster.StartCli({"-o", "json", "watch", id});
  std::string line;
  while (watch->ReadLine(&line)) {
  }
  ADD_FAILURE() << "the watch of " << id << " ended: " << watch->Wait().description;
}

}  // namespace
}  // namespace accumulus::testing
