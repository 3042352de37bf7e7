// The trainer's own record of when it trained, one stderr line per event:
//   accumulus-trainer run: <describe> at_us=<wall clock, µs> <text>
// Read by people and by the fault tests, which check from these lines (not
// from the controller's view) that two attempts of a job never trained at
// the same time.
#pragma once

#include <string>

namespace accumulus::trainer {

// "job job-3 attempt 2 rank 0"
std::string DescribeRank(const std::string& job_id, int attempt, int rank);
// Writes the line with one write(2), safe in a thread about to _exit.
void LogRunEvent(const std::string& describe, const std::string& text);

}  // namespace accumulus::trainer
