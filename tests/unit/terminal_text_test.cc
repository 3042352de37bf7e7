// What users wrote reaches the terminal as text, never as terminal
// commands: escapes, control characters, bidirectional overrides and broken
// UTF-8 are shown escaped, everywhere the CLI prints them.
#include "client/terminal_text.h"

#include <gtest/gtest.h>

#include <string>

#include "accumulus/v1/controller.pb.h"
#include "client/render.h"

namespace accumulus::client {
namespace {

TEST(TerminalSafe, PrintableTextStaysAsItIs) {
  EXPECT_EQ(TerminalSafe("resnet-50 (v2) run #3: ok"), "resnet-50 (v2) run #3: ok");
  EXPECT_EQ(TerminalSafe("crème brûlée × 2, 学習, \xF0\x9F\x9A\x80"),
            "crème brûlée × 2, 学習, \xF0\x9F\x9A\x80");
  EXPECT_EQ(TerminalSafe(""), "");
}

TEST(TerminalSafe, ControlCharactersAreEscaped) {
  EXPECT_EQ(TerminalSafe("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(TerminalSafe("\x1B]0;owned\x07"), "\\x1B]0;owned\\x07");  // set the window title
  EXPECT_EQ(TerminalSafe("\x1B[2J\x1B[H"), "\\x1B[2J\\x1B[H");        // clear the screen
  EXPECT_EQ(TerminalSafe(std::string("nul\0end", 7)), "nul\\x00end");
  EXPECT_EQ(TerminalSafe("del\x7F"), "del\\x7F");
  EXPECT_EQ(TerminalSafe("C:\\data\\x1B"), "C:\\\\data\\\\x1B") << "a backslash is unambiguous";
}

TEST(TerminalSafe, C1ControlsAndBidirectionalOverridesAreEscaped) {
  EXPECT_EQ(TerminalSafe("\xC2\x9B"
                         "31m"),
            "\\u{009B}31m");  // CSI as one code point
  // "evil\u202Etxt.exe" shows as "evilexe.txt" where the override works.
  EXPECT_EQ(TerminalSafe("evil\xE2\x80\xAEtxt.exe"), "evil\\u{202E}txt.exe");
  EXPECT_EQ(TerminalSafe("\xE2\x81\xA6x\xE2\x81\xA9"), "\\u{2066}x\\u{2069}");
  EXPECT_EQ(TerminalSafe("\xE2\x80\x8F"), "\\u{200F}");
}

TEST(TerminalSafe, BytesThatAreNotUtf8AreEscapedOneByOne) {
  EXPECT_EQ(TerminalSafe("\xFF\xFE"), "\\xFF\\xFE");
  EXPECT_EQ(TerminalSafe("\xC3"), "\\xC3") << "a sequence cut short";
  EXPECT_EQ(TerminalSafe("\xC3(x"), "\\xC3(x") << "a lead byte without its continuation";
  EXPECT_EQ(TerminalSafe("\xC0\x9B"), "\\xC0\\x9B") << "an overlong form of ESC";
  EXPECT_EQ(TerminalSafe("\xED\xA0\x80"), "\\xED\\xA0\\x80") << "a surrogate";
  EXPECT_EQ(TerminalSafe("\xF4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80") << "past U+10FFFF";
}

TEST(TerminalSafe, LinesKeepTheirNewlinesOnly) {
  EXPECT_EQ(TerminalSafeLines("spec.yaml line 3: bad\nspec.yaml line 9: \x1B[31mbad"),
            "spec.yaml line 3: bad\nspec.yaml line 9: \\x1B[31mbad");
  EXPECT_EQ(TerminalSafeLines("a\n"), "a\n");
  EXPECT_EQ(TerminalSafeLines("\t\n\r"), "\\t\n\\r");
}

// Every renderer escapes what a user wrote: the job's name, its reason, its
// output path, an attempt's reason, a log line, a state event's reason.
TEST(TerminalSafe, EveryRendererEscapesWhatUsersWrote) {
  constexpr char kHostile[] = "x\x1B[2Jy";
  constexpr char kShown[] = "x\\x1B[2Jy";
  v1::Job job;
  job.set_id("job-abc");
  job.mutable_spec()->set_name(kHostile);
  job.mutable_spec()->set_output(std::string("/out/") + kHostile);
  job.set_reason(kHostile);
  job.set_owner(kHostile);
  job.set_attempt(2);
  job.add_attempts()->set_reason(kHostile);
  v1::ListJobsResponse list;
  v1::JobSummary* summary = list.add_jobs();
  summary->set_name(kHostile);
  summary->set_owner(kHostile);
  summary->set_worker_id(kHostile);
  v1::JobEvent log;
  log.mutable_log()->set_text(kHostile);
  v1::JobEvent state;
  state.mutable_state()->set_reason(kHostile);
  for (const std::string& shown :
       {JobDetails(job), JobTable(list), EventLine(log), EventLine(state)}) {
    EXPECT_EQ(shown.find('\x1B'), std::string::npos) << shown;
    EXPECT_NE(shown.find(kShown), std::string::npos) << shown;
  }
}

}  // namespace
}  // namespace accumulus::client
