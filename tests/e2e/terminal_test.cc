// The watch's live view on a real terminal: tmux runs `accumulus watch` in a
// detached pane of a fixed size, and its screen is read back with
// capture-pane. (The redraw logic itself, step by step, is
// tests/unit/live_view_test.cc, against a model of a terminal.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "accumulus/v1/controller.pb.h"
#include "client/terminal_text.h"
#include "tests/support/job_specs.h"
#include "tests/support/proto_json.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

// 'text' as one shell word.
std::string Quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

TEST(Terminal, WatchInATmuxPaneLeavesFittedStepLinesEveryNAndTheEndAndNoStatusArea) {
  if (std::system("command -v tmux > /dev/null 2>&1") != 0) GTEST_SKIP() << "no tmux";
  TestCluster cluster;
  cluster.StartWorker();
  CliResult submitted =
      cluster.Cli({"-o", "json", "submit", cluster.WriteSpec("small.yaml", kSmallJob)});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.stderr_text;
  const std::string id = FromJson<v1::Job>(submitted.lines.at(0)).id();

  // The pane runs the watch, then signals; `sleep` keeps the pane (and its
  // screen) until the test has read it and ends the server.
  const std::string socket = cluster.dir() + "/tmux.sock";
  const std::string tmux = "tmux -S " + Quoted(socket) + " -f /dev/null";
  std::string watch = BinaryDir() + "/accumulus --controller " + cluster.controller_address();
  for (const std::string& arg : CliSecurityArgs()) watch += " " + Quoted(arg);
  watch += " watch " + id + " --every 5; echo exit=$?; " + tmux + " wait-for -S watched; sleep 600";
  const int columns = 72;
  ASSERT_EQ(std::system((tmux + " new-session -d -s t -x " + std::to_string(columns) + " -y 40 " +
                         Quoted(watch))
                            .c_str()),
            0);
  const int waited = std::system(("timeout 120 " + tmux + " wait-for watched").c_str());
  const std::string screen_path = cluster.dir() + "/screen.txt";
  // -J joins lines the terminal wrapped, so a wrapped line shows as one.
  const int captured =
      std::system((tmux + " capture-pane -p -J -t t > " + Quoted(screen_path)).c_str());
  (void)!std::system((tmux + " kill-server").c_str());
  ASSERT_EQ(waited, 0) << "the watch did not end";
  ASSERT_EQ(captured, 0);

  const std::vector<std::string> screen = Lines(screen_path);
  std::vector<std::string> step_lines;
  for (const std::string& line : screen) {
    EXPECT_NE(line.front(), '[') << "the status area was left behind: " << line;
    if (line.rfind("step ", 0) != 0) continue;  // other events are printed whole
    EXPECT_LT(client::DisplayWidth(line), static_cast<size_t>(columns))
        << "a step line wider than the pane: " << line;
    step_lines.push_back(line.substr(0, line.find(' ', 5)));
  }
  // 14 steps: the first, every 5th, the last.
  EXPECT_EQ(step_lines,
            (std::vector<std::string>{"step 1/14", "step 5/14", "step 10/14", "step 14/14"}))
      << ::testing::PrintToString(screen);
  ASSERT_GE(screen.size(), 2u);
  EXPECT_EQ(screen.back(), "exit=0");
  EXPECT_EQ(screen[screen.size() - 2].rfind("state succeeded", 0), 0u)
      << ::testing::PrintToString(screen);
}

}  // namespace
}  // namespace accumulus::testing
