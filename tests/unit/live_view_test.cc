// The watch's live view, replayed through a model of a terminal: what ends
// up on the screen, line by line, and whether anything wrapped.
#include "client/live_view.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "client/terminal_text.h"

namespace accumulus::client {
namespace {

// A terminal `width` columns wide that understands what the live view
// writes: text (wrapping after the last column), "\n" (the tty's newline:
// to the next line's start), "\r", ESC[nA (up n lines), ESC[J (clear to
// the end of the screen). Its screen holds every line written, scrollback
// included, one code point per cell.
class TerminalModel {
 public:
  explicit TerminalModel(size_t width) : width_(width), lines_(1) {}

  void Write(const std::string& bytes) {
    for (size_t i = 0; i < bytes.size();) {
      const char c = bytes[i];
      if (c == '\n') {
        NextLine();
        ++i;
      } else if (c == '\r') {
        column_ = 0;
        ++i;
      } else if (c == '\033') {
        i = Escape(bytes, i);
      } else {
        size_t end = i + 1;
        while (end < bytes.size() && (static_cast<unsigned char>(bytes[end]) & 0xC0) == 0x80) {
          ++end;
        }
        Put(bytes.substr(i, end - i));
        i = end;
      }
    }
  }

  std::vector<std::string> Screen() const {
    std::vector<std::string> out;
    for (const auto& cells : lines_) {
      std::string line;
      for (const auto& cell : cells) line += cell;
      out.push_back(line);
    }
    while (!out.empty() && out.back().empty()) out.pop_back();
    return out;
  }
  int wraps() const { return wraps_; }

 private:
  void NextLine() {
    ++row_;
    column_ = 0;
    if (row_ == lines_.size()) lines_.emplace_back();
  }
  void Put(const std::string& cell) {
    if (column_ == width_) {
      ++wraps_;
      NextLine();
    }
    auto& line = lines_[row_];
    if (line.size() <= column_) line.resize(column_ + 1, " ");
    line[column_++] = cell;
  }
  size_t Escape(const std::string& bytes, size_t i) {
    EXPECT_EQ(bytes.at(i + 1), '[') << "only CSI sequences";
    size_t j = i + 2;
    int n = 0;
    while (std::isdigit(static_cast<unsigned char>(bytes.at(j)))) n = n * 10 + (bytes[j++] - '0');
    switch (bytes.at(j)) {
      case 'A':
        row_ -= std::min<size_t>(row_, static_cast<size_t>(std::max(n, 1)));
        break;
      case 'J':
        lines_[row_].resize(std::min(lines_[row_].size(), column_));
        lines_.resize(row_ + 1);
        break;
      default:
        ADD_FAILURE() << "unexpected sequence ESC[" << bytes[j];
    }
    return j + 1;
  }

  size_t width_;
  std::vector<std::vector<std::string>> lines_;
  size_t row_ = 0;
  size_t column_ = 0;
  int wraps_ = 0;
};

v1::JobEvent Step(int64_t step, int64_t total, double seconds) {
  v1::JobEvent event;
  event.set_sequence(step + 2);
  event.mutable_time()->set_seconds(1000 + static_cast<int64_t>(seconds));
  event.mutable_time()->set_nanos(
      static_cast<int32_t>((seconds - static_cast<int64_t>(seconds)) * 1e9));
  v1::StepMetrics* m = event.mutable_step();
  m->set_step(step);
  m->set_steps_total(total);
  m->set_loss(2.0 / static_cast<double>(step));
  m->set_effective_batch(512);
  m->set_samples(512);
  m->set_microbatches(8);
  m->set_samples_per_second(2500);
  m->set_tensor_peak_bytes(12 << 20);
  m->set_lr(0.001);
  return event;
}

v1::JobEvent Warning(const std::string& text) {
  v1::JobEvent event;
  event.mutable_log()->set_level(v1::LogMessage::LEVEL_WARNING);
  event.mutable_log()->set_text(text);
  return event;
}

std::vector<int64_t> StepLines(const std::vector<std::string>& screen) {
  std::vector<int64_t> steps;
  for (const std::string& line : screen) {
    if (line.rfind("step ", 0) == 0) steps.push_back(std::stoll(line.substr(5)));
  }
  return steps;
}

TEST(LiveView, PrintsEveryNthStepAndTheLastUnderOneStatusAreaRedrawnInPlace) {
  TerminalModel terminal(100);
  LiveView view(10, 45);
  for (int64_t step = 1; step <= 45; ++step) {
    terminal.Write(view.OnEvent(Step(step, 45, 0.5 * static_cast<double>(step)), 100));
    const std::vector<std::string> screen = terminal.Screen();
    // The status area is the last two lines, once, however many redraws.
    ASSERT_GE(screen.size(), 2u);
    const std::string& progress = screen[screen.size() - 2];
    EXPECT_EQ(progress.front(), '[') << progress;
    EXPECT_NE(progress.find(" " + std::to_string(step) + "/45 "), std::string::npos) << progress;
    EXPECT_EQ(screen.back().rfind("loss ", 0), 0u) << screen.back();
    EXPECT_EQ(std::count_if(screen.begin(), screen.end(),
                            [](const std::string& l) { return l.rfind("[", 0) == 0; }),
              1);
  }
  EXPECT_EQ(StepLines(terminal.Screen()), (std::vector<int64_t>{1, 10, 20, 30, 40, 45}));
  // Two steps a second: 2.0 steps/s, and at the end nothing left to wait for.
  const std::vector<std::string> screen = terminal.Screen();
  EXPECT_NE(screen[screen.size() - 2].find("100%  2.0 steps/s  2.5k samples/s"), std::string::npos)
      << screen[screen.size() - 2];
  EXPECT_EQ(screen.back(), "loss 0.0444  batch 512  peak 12.0 MiB");

  terminal.Write(view.Finish(100));
  EXPECT_EQ(StepLines(terminal.Screen()), (std::vector<int64_t>{1, 10, 20, 30, 40, 45}));
  EXPECT_EQ(terminal.Screen().size(), 6u) << "the status area is gone";
  EXPECT_EQ(terminal.wraps(), 0);
}

TEST(LiveView, TheEtaFollowsTheRecentRate) {
  TerminalModel terminal(120);
  LiveView view(10, 100);
  for (int64_t step = 1; step <= 20; ++step) {
    terminal.Write(view.OnEvent(Step(step, 100, 0.25 * static_cast<double>(step)), 120));
  }
  const std::vector<std::string> screen = terminal.Screen();
  // 4 steps/s, 80 to go.
  EXPECT_NE(screen[screen.size() - 2].find("20/100  20%  ETA 20s  4.0 steps/s"), std::string::npos)
      << screen[screen.size() - 2];
}

TEST(LiveView, AnyOtherEventIsPrintedWholeAfterTheStepItFollowed) {
  TerminalModel terminal(100);
  LiveView view(10, 45);
  for (int64_t step = 1; step <= 13; ++step) {
    terminal.Write(view.OnEvent(Step(step, 45, step), 100));
  }
  terminal.Write(view.OnEvent(Warning("loss scale lowered to 1024"), 100));
  terminal.Write(view.OnEvent(Step(14, 45, 14), 100));
  terminal.Write(view.Finish(100));
  const std::vector<std::string> screen = terminal.Screen();
  EXPECT_EQ(StepLines(screen), (std::vector<int64_t>{1, 10, 13, 14}))
      << "13 before the warning; 14, the last seen, at the end";
  ASSERT_EQ(screen.size(), 5u);
  EXPECT_EQ(screen[3], "warning: loss scale lowered to 1024");
}

TEST(LiveView, TheClisOwnLinesGoAboveTheStatusAreaLikeEvents) {
  TerminalModel terminal(100);
  LiveView view(10, 45);
  for (int64_t step = 1; step <= 3; ++step) {
    terminal.Write(view.OnEvent(Step(step, 45, step), 100));
  }
  terminal.Write(
      view.OnNote("lost the controller (restarting); reconnecting after event 5...", 100));
  const std::vector<std::string> screen = terminal.Screen();
  ASSERT_EQ(screen.size(), 5u);
  EXPECT_EQ(StepLines(screen), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(screen[2], "lost the controller (restarting); reconnecting after event 5...");
  EXPECT_EQ(screen[3].front(), '[');
  EXPECT_EQ(terminal.wraps(), 0);
}

TEST(LiveView, ANarrowTerminalGetsFittedLinesAndNothingWraps) {
  for (size_t width : {20u, 40u, 80u}) {
    TerminalModel terminal(width);
    LiveView view(1, 1000);
    for (int64_t step = 1; step <= 30; ++step) {
      v1::JobEvent event = Step(step, 1000, static_cast<double>(step));
      event.mutable_step()->mutable_noise()->set_noise_scale(1900);
      terminal.Write(view.OnEvent(event, static_cast<int>(width)));
    }
    const std::vector<std::string> screen = terminal.Screen();
    for (const std::string& line : screen) {
      EXPECT_LT(DisplayWidth(line), width) << "width " << width << ": " << line;
    }
    EXPECT_EQ(terminal.wraps(), 0) << "width " << width;
    EXPECT_EQ(StepLines(screen).size(), 30u);
    // The bar gives way before the counts.
    const std::string& progress = screen[screen.size() - 2];
    EXPECT_NE(progress.find("30/1000"), std::string::npos) << progress;
    EXPECT_EQ(progress.front() == '[', width >= 80) << progress;
  }
}

TEST(LiveView, TheNoiseScaleIsShownWhereMeasured) {
  TerminalModel terminal(120);
  LiveView view(10, 45);
  v1::JobEvent event = Step(1, 45, 1);
  terminal.Write(view.OnEvent(event, 120));
  EXPECT_EQ(terminal.Screen().back().find("B_noise"), std::string::npos);
  event = Step(2, 45, 2);
  event.mutable_step()->mutable_noise()->set_noise_scale(1900);
  event.mutable_step()->mutable_noise()->set_tokens(true);
  terminal.Write(view.OnEvent(event, 120));
  EXPECT_EQ(terminal.Screen().back(), "loss 1.0000  batch 512  peak 12.0 MiB  B_noise 1.9k tokens");
}

TEST(LiveView, AJobThatEndsEarlyShowsItsLastStepBeforeItsEnd) {
  TerminalModel terminal(100);
  LiveView view(10, 45);
  for (int64_t step = 1; step <= 37; ++step) {
    terminal.Write(view.OnEvent(Step(step, 45, step), 100));
  }
  v1::JobEvent failed;
  failed.mutable_state()->set_state(v1::JOB_STATE_FAILED);
  failed.mutable_state()->set_reason("trainer crashed");
  terminal.Write(view.OnEvent(failed, 100));
  terminal.Write(view.Finish(100));
  const std::vector<std::string> screen = terminal.Screen();
  EXPECT_EQ(StepLines(screen), (std::vector<int64_t>{1, 10, 20, 30, 37}));
  EXPECT_EQ(screen.back(), "state failed: trainer crashed");
}

}  // namespace
}  // namespace accumulus::client
