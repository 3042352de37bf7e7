// A test that hangs does not wait for ctest's timeout in silence: past its
// limit, the logs of the processes it started are printed and the processes
// killed, and the test fails on its own.
#include "tests/support/hang_watchdog.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <string>

#include "common/paths.h"
#include "common/subprocess.h"
#include "tests/support/read_file.h"

namespace accumulus::testing {
namespace {

TEST(HangWatchdog, AHungTestPrintsItsProcessesLogsAndFails) {
  char dir[] = "/tmp/accumulus-hang-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string output = std::string(dir) + "/output.log";
  SpawnOptions options;
  options.argv = {SiblingExecutable("accumulus_hang_target")};
  options.env = {{"ACCUMULUS_TEST_HANG_SECONDS", "2"}};
  options.log_path = output;
  StatusOr<std::unique_ptr<Subprocess>> target = Subprocess::Spawn(options);
  ASSERT_TRUE(target.ok()) << target.status().message();
  const Subprocess::ExitInfo exit = (*target)->Wait();
  const std::string said = ReadFile(output);

  EXPECT_EQ(exit.exit_code, 1) << exit.description << "\n" << said;
  const size_t report =
      said.find("HangTarget.WatchesAJobThatNeverStarts is still running after 2 s: it hangs");
  const size_t kill = said.find("killing the 2 process(es) it started", report);
  ASSERT_NE(report, std::string::npos) << said;
  ASSERT_NE(kill, std::string::npos) << "the controller and the watch\n" << said;
  // Between the two, the controller's log, to what it did last: it took
  // the job that no worker runs.
  const std::string logs = said.substr(report, kill - report);
  EXPECT_NE(logs.find("/controller.log\n"), std::string::npos) << logs;
  EXPECT_NE(logs.find("submitted by admin"), std::string::npos) << logs;
  // Killed, the watch ended, and the test went on to fail by itself.
  EXPECT_NE(said.find("the watch of job-"), std::string::npos) << said;
  EXPECT_EQ(said.find("did not end"), std::string::npos) << said;
  std::system(("rm -rf " + std::string(dir)).c_str());
}

}  // namespace
}  // namespace accumulus::testing
