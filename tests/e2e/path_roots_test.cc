// A worker confined to its roots, end to end: a job whose output would land
// outside them fails at once and for good, naming the field and the path,
// and writes nothing; a job inside them trains and writes where its relative
// path leads.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "accumulus/v1/controller.pb.h"
#include "tests/support/job_specs.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

std::string Job(const std::string& output) {
  return TinyJob("{kind: mlp, hidden: [8]}", "max_restarts: 2\noutput: " + output + "\n");
}

// Submits, waits for the end, returns the job as it ended.
v1::Job RunToTheEnd(const TestCluster& cluster, const std::string& name, const std::string& yaml) {
  const std::string id = SubmitJob(cluster, name, yaml);
  cluster.Cli({"watch", id});  // exits when the job ends, whichever way
  return GetJob(cluster, id);
}

TEST(PathRoots, AnOutputOutsideTheWorkersRootsFailsTheJobOnceNamingFieldAndPath) {
  TestCluster cluster;
  const std::string data = cluster.dir() + "/data", out = cluster.dir() + "/out";
  std::filesystem::create_directories(data);
  std::filesystem::create_directories(out);
  cluster.StartWorker(1, {"--data-root", data, "--output-root", out});

  const v1::Job escaped = RunToTheEnd(cluster, "escape.yaml", Job("../escaped.pt"));
  EXPECT_EQ(escaped.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(escaped.failure_class(), v1::FAILURE_CLASS_BAD_SPEC);
  EXPECT_NE(escaped.reason().find("output \"../escaped.pt\" resolves to " +
                                  std::filesystem::canonical(cluster.dir()).string() +
                                  "/escaped.pt, outside this worker's --output-root"),
            std::string::npos)
      << escaped.reason();
  EXPECT_EQ(escaped.attempt(), 1) << "refused for good: no restart";
  EXPECT_FALSE(std::filesystem::exists(cluster.dir() + "/escaped.pt"));

  const v1::Job inside = RunToTheEnd(cluster, "inside.yaml", Job("model.pt"));
  EXPECT_EQ(inside.state(), v1::JOB_STATE_SUCCEEDED) << inside.reason();
  EXPECT_TRUE(std::filesystem::exists(out + "/model.pt"));
}

}  // namespace
}  // namespace accumulus::testing
