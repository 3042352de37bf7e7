// --config FILE: what the file holds that the program cannot take is named
// with the file and its line, as a spec's problems are.
#include "common/config_flags.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "tests/support/temp_dir.h"

namespace accumulus {
namespace {

struct Parsed {
  std::optional<int> exit_code;
  std::string stderr_text;
  int lost_worker_ms = 0;
};

// Parses `args` (after the program's name) for a daemon with two flags and
// the shared --config, as the daemons' main()s do.
Parsed Parse(std::vector<std::string> args) {
  CLI::App app("test daemon");
  Parsed out;
  int metrics_port = 0;
  bool check_only = false;
  app.add_option("--lost-worker-ms", out.lost_worker_ms)->check(CLI::Range(0, 3600000));
  app.add_option("--metrics-port", metrics_port);
  AddConfigFlags(&app, &check_only);
  args.insert(args.begin(), "daemon");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  std::ostringstream captured;
  std::streambuf* const saved = std::cerr.rdbuf(captured.rdbuf());
  out.exit_code = ParseFlags(&app, static_cast<int>(argv.size()), argv.data());
  std::cerr.rdbuf(saved);
  out.stderr_text = captured.str();
  return out;
}

class ConfigFlags : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    std::ofstream(path_) << text;
    return path_;
  }

  const testing::TempDir temp_;
  const std::string path_ = temp_.path() + "/daemon.toml";
};

TEST_F(ConfigFlags, AFileOfFlagsIsRead) {
  const Parsed parsed = Parse({"--config", Write("# tuned\nlost-worker-ms = 9000\n")});
  EXPECT_FALSE(parsed.exit_code.has_value()) << parsed.stderr_text;
  EXPECT_EQ(parsed.lost_worker_ms, 9000);
}

TEST_F(ConfigFlags, ANameThatIsNoFlagIsNamedWithItsLine) {
  const Parsed parsed =
      Parse({"--config", Write("# tuned\n\nlost-worker-ms = 9000\nmetrics-prot = 9\n")});
  ASSERT_TRUE(parsed.exit_code.has_value());
  EXPECT_NE(*parsed.exit_code, 0);
  EXPECT_EQ(parsed.stderr_text,
            "--config " + path_ + ":4: metrics-prot is not a flag of this program\n");
}

TEST_F(ConfigFlags, AListForOneValueIsNamedWithItsLine) {
  const Parsed parsed = Parse({"--config", Write("metrics-port = [1, 2]\n")});
  ASSERT_TRUE(parsed.exit_code.has_value());
  EXPECT_EQ(parsed.stderr_text,
            "--config " + path_ + ":1: --metrics-port: At Most 1 required but received 2\n");
}

TEST_F(ConfigFlags, ADottedNameIsNamedWithItsLine) {
  const Parsed parsed = Parse({"--config", Write("\nmetrics-port.x = 1\n")});
  ASSERT_TRUE(parsed.exit_code.has_value());
  EXPECT_EQ(parsed.stderr_text,
            "--config " + path_ + ":2: metrics-port.x is not a flag of this program\n");
}

TEST_F(ConfigFlags, AFlagWithoutAValueIsNamedWithItsLine) {
  const Parsed parsed = Parse({"--config", Write("\nmetrics-port =\n")});
  ASSERT_TRUE(parsed.exit_code.has_value());
  EXPECT_EQ(parsed.stderr_text,
            "--config " + path_ +
                ":2: expected NAME = VALUE (a flag's long name and its value, on one "
                "line)\n");
  EXPECT_TRUE(Parse({"--config", Write("lost-worker-ms\n")}).exit_code.has_value());
}

TEST_F(ConfigFlags, AListOverSeveralLinesIsNamedWithItsFirstLineThatIsNoEntry) {
  const Parsed parsed =
      Parse({"--config", Write("metrics-port = 7601\nlost-worker-ms = [\n  1,\n]\n")});
  ASSERT_TRUE(parsed.exit_code.has_value());
  EXPECT_EQ(parsed.stderr_text.rfind("--config " + path_ + ":3: expected NAME = VALUE", 0), 0u)
      << parsed.stderr_text;
}

TEST_F(ConfigFlags, ATableIsNamedWithItsLine) {
  const Parsed parsed = Parse({"--config", Write("lost-worker-ms = 9000\n[worker]\nport = 5\n")});
  ASSERT_TRUE(parsed.exit_code.has_value());
  EXPECT_EQ(parsed.stderr_text, "--config " + path_ +
                                    ":2: [worker] opens a table; flags go at the top level, "
                                    "NAME = VALUE\n");
}

TEST_F(ConfigFlags, AValueOutOfRangeIsNamedWithTheFlagAndTheLine) {
  const Parsed parsed = Parse({"--config", Write("metrics-port = 7601\nlost-worker-ms = -5\n")});
  ASSERT_TRUE(parsed.exit_code.has_value());
  EXPECT_NE(*parsed.exit_code, 0);
  EXPECT_EQ(parsed.stderr_text.rfind("--config " + path_ + ":2: --lost-worker-ms: ", 0), 0u)
      << parsed.stderr_text;
}

TEST_F(ConfigFlags, TheCommandLineWinsOverTheFile) {
  const Parsed parsed =
      Parse({"--config", Write("lost-worker-ms = -5\n"), "--lost-worker-ms", "7000"});
  EXPECT_FALSE(parsed.exit_code.has_value()) << parsed.stderr_text;
  EXPECT_EQ(parsed.lost_worker_ms, 7000);
}

TEST_F(ConfigFlags, ABadValueOnTheCommandLineIsNotBlamedOnTheFile) {
  const Parsed parsed =
      Parse({"--config", Write("metrics-port = 7601\n"), "--lost-worker-ms", "-5"});
  ASSERT_TRUE(parsed.exit_code.has_value());
  EXPECT_EQ(parsed.stderr_text.find("--config"), std::string::npos) << parsed.stderr_text;
}

}  // namespace
}  // namespace accumulus
