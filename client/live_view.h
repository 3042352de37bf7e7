// `accumulus watch` on a terminal: the job's events as lines, under them one
// status area redrawn in place —
//
//   [##########..........]  412/1000  41%  ETA 2m03s  4.8 steps/s  2.5k samples/s
//   loss 0.4312  batch 512 = 64×8×1  peak 12.3 MiB  B_noise 1.9k
//
// — each line fitted to the terminal's width (the bar gives way first, then
// fields from the end). Step lines are printed every `every` steps, and
// always the first, the last, and the latest before any event that is not a
// step (warnings, restarts, plan changes), which is always printed.
//
// Pure: it returns the bytes to write (text and the ANSI sequences that
// move the cursor over the status area and clear it), so the redraw logic
// is tested by replaying them through a terminal model. Piped output does
// not use it (plain lines, or JSON).
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "accumulus/v1/job.pb.h"

namespace accumulus::client {

class LiveView {
 public:
  // `every`: a step line every this many steps (at least 1). `steps_total`:
  // the job's, until a step reports it.
  LiveView(int64_t every, int64_t steps_total);

  // What to write for `event` on a terminal `width` columns wide.
  std::string OnEvent(const v1::JobEvent& event, int width);
  // What to write for a line of the CLI's own (a lost connection): above
  // the status area, after the step it followed, as an event's.
  std::string OnNote(const std::string& line, int width);
  // What to write when the watch ends: the last step's line if it was not
  // printed, and the status area erased.
  std::string Finish(int width);

 private:
  // Moves the cursor to the status area's first line and clears to the end
  // of the screen.
  std::string Erase();
  std::string StatusArea(int width);
  // The latest step's line, if it has not been printed.
  std::string PendingStepLine(int width);
  double StepsPerSecond() const;

  int64_t every_;
  int64_t steps_total_;
  int status_lines_ = 0;  // lines the status area takes now (0: not drawn)
  bool have_step_ = false;
  bool step_printed_ = false;
  v1::JobEvent latest_step_;
  // (time in seconds, step) of recent steps, for the rate and the ETA.
  std::deque<std::pair<double, int64_t>> recent_;
};

}  // namespace accumulus::client
