#include "worker/engine/thread_split.h"

#include <chrono>

#include "worker/engine/thread_setup.h"

namespace accumulus::engine {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

std::vector<ThreadSplit> CandidateThreadSplits(int cores) {
  if (cores <= 1) return {{1, 1}};
  return {{cores, 1}, {1, cores}};
}

std::vector<ThreadTrial> MeasureThreadSplits(const std::vector<ThreadSplit>& candidates,
                                             int64_t samples, const std::function<void()>& pass,
                                             double min_seconds, double warmup_seconds) {
  std::vector<ThreadTrial> trials;
  for (const ThreadSplit& split : candidates) {
    SetThreadCounts(split.intra_op, split.blas);
    const auto warmup = Clock::now();
    do {
      pass();
    } while (SecondsSince(warmup) < warmup_seconds);
    int64_t passes = 0;
    const auto start = Clock::now();
    double seconds = 0;
    do {
      pass();
      ++passes;
      seconds = SecondsSince(start);
    } while (seconds < min_seconds);
    trials.push_back({split, static_cast<double>(passes * samples) / seconds});
  }
  const ThreadSplit best = Fastest(trials);
  SetThreadCounts(best.intra_op, best.blas);
  return trials;
}

ThreadSplit Fastest(const std::vector<ThreadTrial>& trials) {
  ThreadSplit best;
  double rate = -1;
  for (const ThreadTrial& t : trials) {
    if (t.samples_per_second > rate) {
      rate = t.samples_per_second;
      best = t.split;
    }
  }
  return best;
}

}  // namespace accumulus::engine
