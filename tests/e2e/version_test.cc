// `--version` on every program a user or an operator runs: its name and the
// project's version on stdout, exit 0, whatever else is (not) configured —
// what a bug report, an image's smoke test or a fleet inventory asks first.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

TEST(Version, EachProgramSaysItsNameAndVersionAndExitsZero) {
  for (const std::string program : {"accumulus", "accumulus-controller", "accumulus-worker"}) {
    SpawnOptions options;
    options.argv = {BinaryDir() + "/" + program, "--version"};
    options.capture_stdout = true;
    auto process = Subprocess::Spawn(options);
    ASSERT_TRUE(process.ok()) << process.status().ToString();
    std::string line;
    EXPECT_TRUE((*process)->ReadLine(&line)) << program;
    EXPECT_EQ(line, program + " " + ACCUMULUS_VERSION);
    const Subprocess::ExitInfo exit = (*process)->Wait();
    EXPECT_EQ(exit.exit_code, 0) << program << ": " << exit.description;
  }
}

}  // namespace
}  // namespace accumulus::testing
