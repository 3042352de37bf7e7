// `accumulus up`: a local controller and worker that run a job and stop
// cleanly on Ctrl-C (SIGINT), or when the terminal closes (SIGHUP).
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>

#include "tests/support/temp_dir.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

class UpStoppedBy : public ::testing::TestWithParam<int> {};

TEST_P(UpStoppedBy, RunsAJobAndStopsEverything) {
  const TempDir temp;
  const std::string& dir = temp.path();

  SpawnOptions options;
  options.argv = {BinaryDir() + "/accumulus",
                  "up",
                  "--data-dir",
                  dir + "/data",
                  "--port",
                  "0",
                  "--metrics-port",
                  "0",
                  "--worker-metrics-port",
                  "0"};
  options.capture_stdout = true;
  options.log_path = dir + "/up.stderr";
  auto up = Subprocess::Spawn(options);
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  std::string line;
  ASSERT_TRUE((*up)->ReadLine(&line));
  std::smatch match;
  ASSERT_TRUE(std::regex_search(line, match, std::regex(R"(controller (127\.0\.0\.1:\d+))")))
      << line;
  const std::string address = match[1];

  // The job can only succeed once the worker registered and ran it.
  SpawnOptions submit;
  // TLS and tokens by default, with the certificates and the admin token
  // `up` made under its data dir.
  const std::string ca = dir + "/data/tls/ca.pem";
  const std::string token = dir + "/data/admin.token";
  submit.argv = {BinaryDir() + "/accumulus",
                 "--controller",
                 address,
                 "--ca-file",
                 ca,
                 "--token-file",
                 token,
                 "submit",
                 std::string(ACCUMULUS_SOURCE_DIR) + "/examples/jobs/short-last-window.yaml",
                 "--watch"};
  submit.capture_stdout = true;
  submit.log_path = dir + "/submit.stderr";
  auto job = Subprocess::Spawn(submit);
  ASSERT_TRUE(job.ok());
  while ((*job)->ReadLine(&line)) {
  }
  EXPECT_EQ((*job)->Wait().exit_code, 0);

  (*up)->Signal(GetParam());
  EXPECT_EQ((*up)->Wait().exit_code, 0);

  // Nothing listens there any more.
  SpawnOptions list;
  list.argv = {BinaryDir() + "/accumulus",
               "--controller",
               address,
               "--ca-file",
               ca,
               "--token-file",
               token,
               "--timeout",
               "1",
               "list"};
  list.log_path = dir + "/list.stderr";
  auto after = Subprocess::Spawn(list);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)->Wait().exit_code, 1);
}

INSTANTIATE_TEST_SUITE_P(Signals, UpStoppedBy, ::testing::Values(SIGINT, SIGHUP),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == SIGINT ? "Interrupt" : "Hangup");
                         });

}  // namespace
}  // namespace accumulus::testing
