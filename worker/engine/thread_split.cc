#include "worker/engine/thread_split.h"

#include <algorithm>
#include <chrono>

#include "worker/engine/thread_setup.h"

namespace accumulus::engine {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

std::vector<ThreadSplit> CandidateThreadSplits(int cores, bool shared_pool) {
  if (cores <= 1) return {{1, 1}};
  std::vector<ThreadSplit> candidates{{cores, 1}, {1, cores}};
  if (shared_pool) candidates.push_back({cores, cores});
  return candidates;
}

std::vector<ThreadTrial> MeasureThreadSplits(const std::vector<ThreadSplit>& candidates,
                                             int64_t samples, const std::function<void()>& pass,
                                             double min_seconds, double warmup_seconds,
                                             int rounds) {
  std::vector<ThreadTrial> trials;
  for (const ThreadSplit& split : candidates) trials.push_back({split, 0.0});
  for (int round = 0; round < rounds; ++round) {
    for (ThreadTrial& trial : trials) {
      SetThreadCounts(trial.split.intra_op, trial.split.blas);
      // Untimed: the pools start (the first round's warm-up), the previous
      // split's threads go idle.
      const auto settle = Clock::now();
      double pass_seconds = 0;
      do {
        const auto one = Clock::now();
        pass();
        pass_seconds = SecondsSince(one);
      } while (round == 0 && SecondsSince(settle) < warmup_seconds);
      // A pass this long averages over a neighbour's bursts by itself.
      if (round == 0 && &trial == &trials.front() && pass_seconds * rounds >= min_seconds) {
        rounds = 1;
      }
      int64_t passes = 0;
      const auto start = Clock::now();
      double seconds = 0;
      do {
        pass();
        ++passes;
        seconds = SecondsSince(start);
      } while (seconds < min_seconds / rounds);
      // Its best round: noise on a shared machine only ever slows a pass.
      trial.samples_per_second =
          std::max(trial.samples_per_second, static_cast<double>(passes * samples) / seconds);
    }
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
