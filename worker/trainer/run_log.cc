#include "worker/trainer/run_log.h"

#include <unistd.h>

#include <chrono>

namespace accumulus::trainer {

std::string DescribeRank(const std::string& job_id, int attempt, int rank) {
  return "job " + job_id + " attempt " + std::to_string(attempt) + " rank " + std::to_string(rank);
}

void LogRunEvent(const std::string& describe, const std::string& text) {
  const auto now = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  const std::string line = "accumulus-trainer run: " + describe +
                           " at_us=" + std::to_string(now.count()) + " " + text + "\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace accumulus::trainer
