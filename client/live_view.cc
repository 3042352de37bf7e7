#include "client/live_view.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "client/noise_advice.h"
#include "client/render.h"
#include "client/terminal_text.h"

namespace accumulus::client {
namespace {

// Steps the rate is taken over: recent enough to follow a change of speed,
// enough to smooth one slow step.
constexpr size_t kRateSteps = 20;
// Below this the bar says nothing; the counts alone are shown.
constexpr int kNarrowestBar = 10;

std::string Printf(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// "45s", "2m03s", "5h07m".
std::string Duration(double seconds) {
  const auto s = static_cast<int64_t>(seconds + 0.5);
  char buffer[32];
  if (s < 60) {
    std::snprintf(buffer, sizeof buffer, "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(buffer, sizeof buffer, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buffer, sizeof buffer, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  }
  return buffer;
}

double Seconds(const google::protobuf::Timestamp& t) {
  return static_cast<double>(t.seconds()) + t.nanos() * 1e-9;
}

// Fields joined by two spaces, as many from the front as fit in `columns`
// (the first cut to fit when even it does not).
std::string FittedFields(const std::vector<std::string>& fields, size_t columns) {
  std::string line;
  for (const std::string& field : fields) {
    const std::string next = line.empty() ? field : line + "  " + field;
    if (DisplayWidth(next) > columns) break;
    line = next;
  }
  return line.empty() && !fields.empty() ? FitToWidth(fields.front(), columns) : line;
}

}  // namespace

LiveView::LiveView(int64_t every, int64_t steps_total)
    : every_(std::max<int64_t>(every, 1)), steps_total_(steps_total) {}

std::string LiveView::OnEvent(const v1::JobEvent& event, int width) {
  // Anything but a step is news: printed whole.
  if (!event.has_step()) return OnNote(EventLine(event), width);
  std::string out = Erase();
  // A superseded attempt's step is no progress (the piped view shows it).
  if (!event.stale()) {
    const v1::StepMetrics& m = event.step();
    latest_step_ = event;
    have_step_ = true;
    step_printed_ = false;
    if (m.steps_total() > 0) steps_total_ = m.steps_total();
    recent_.emplace_back(Seconds(event.time()), m.step());
    while (recent_.size() > kRateSteps) recent_.pop_front();
    if (m.step() == 1 || m.step() % every_ == 0 || m.step() == steps_total_) {
      out += PendingStepLine(width);
    }
  }
  return out + StatusArea(width);
}

std::string LiveView::OnNote(const std::string& line, int width) {
  std::string out = Erase();
  out += PendingStepLine(width);  // the step it followed
  return out + line + "\n" + StatusArea(width);
}

std::string LiveView::Finish(int width) {
  std::string out = Erase();
  return out + PendingStepLine(width);
}

std::string LiveView::Erase() {
  if (status_lines_ == 0) return "";
  std::string out = "\r";
  if (status_lines_ > 1) out += "\033[" + std::to_string(status_lines_ - 1) + "A";
  status_lines_ = 0;
  return out + "\033[J";
}

std::string LiveView::PendingStepLine(int width) {
  if (!have_step_ || step_printed_) return "";
  step_printed_ = true;
  // History, not news: one line, never wrapped.
  return FitToWidth(EventLine(latest_step_), static_cast<size_t>(std::max(width - 1, 1))) + "\n";
}

double LiveView::StepsPerSecond() const {
  if (recent_.size() < 2) return 0;
  const double seconds = recent_.back().first - recent_.front().first;
  const auto steps = static_cast<double>(recent_.back().second - recent_.front().second);
  return seconds > 0 && steps > 0 ? steps / seconds : 0;
}

std::string LiveView::StatusArea(int width) {
  if (!have_step_) return "";
  // One column short of the width: a line that fills the last column
  // makes some terminals wrap, and the redraw would miscount its lines.
  const auto columns = static_cast<size_t>(std::max(width - 1, 1));
  const v1::StepMetrics& m = latest_step_.step();
  const int64_t done = m.step();
  const double rate = StepsPerSecond();
  const double fraction =
      steps_total_ > 0 ? std::clamp(static_cast<double>(done) / steps_total_, 0.0, 1.0) : 0;

  std::vector<std::string> progress{std::to_string(done) + "/" + std::to_string(steps_total_),
                                    Printf("%.0f%%", fraction * 100)};
  if (rate > 0 && steps_total_ > done) {
    progress.push_back("ETA " + Duration(static_cast<double>(steps_total_ - done) / rate));
  }
  if (rate > 0) progress.push_back(Printf(rate < 10 ? "%.1f steps/s" : "%.0f steps/s", rate));
  progress.push_back(HumanRate(m.samples_per_second()) + " samples/s");
  std::string counts = FittedFields(progress, columns);
  const int bar = static_cast<int>(columns) - static_cast<int>(DisplayWidth(counts)) - 4;
  std::string first = counts;
  if (bar >= kNarrowestBar) {
    const int filled = static_cast<int>(fraction * bar);
    first = "[" + std::string(filled, '#') + std::string(bar - filled, '.') + "]  " + counts;
  }

  std::vector<std::string> latest{Printf("loss %.4f", m.loss()),
                                  "batch " + std::to_string(m.effective_batch()),
                                  "peak " + HumanBytes(m.tensor_peak_bytes())};
  if (m.has_noise() && m.noise().noise_scale() > 0) {
    latest.push_back("B_noise " + HumanCount(m.noise().noise_scale()) +
                     (m.noise().tokens() ? " tokens" : ""));
  }
  status_lines_ = 2;
  return first + "\n" + FittedFields(latest, columns);
}

}  // namespace accumulus::client
