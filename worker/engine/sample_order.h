// The order in which a job sees its samples. Standard library only.
//
// Each epoch is a seeded permutation of [0, samples), consumed in order, one
// global batch per optimizer step. Which samples a step sees depends only on
// the seed, the epoch and the global batch, never on how the global batch is
// split into micro-batches and devices: that is what makes runs with
// different splits comparable, and resumable on a different device count.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "common/window_schedule.h"

namespace accumulus::engine {

// The permutation of [0, samples) for one epoch. A Fisher-Yates shuffle
// driven by SplitMix64, written out here (not std::shuffle, whose algorithm
// is implementation-defined) so the order is the same on every platform and
// easy to reproduce in a Python reference.
std::vector<int64_t> EpochPermutation(int64_t samples, uint64_t seed, int64_t epoch);

// Samples [begin, end) of one window within an epoch's permutation.
struct WindowRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// The micro-batches of one rank within a window of `window_size` samples:
// rank r takes positions [r·m·k, (r+1)·m·k) of the window (clipped to its
// size), cut into pieces of m. Ranks beyond a short window's end get none.
std::vector<WindowRange> MicroBatchesOf(const WindowRange& window, int64_t micro_batch,
                                        int64_t accumulation_steps, int rank);

// The samples of each window, in stream order: the permutation of each epoch
// it touches (computed once per epoch, the two newest kept).
class SampleStream {
 public:
  SampleStream(int64_t samples, uint64_t seed) : samples_(samples), seed_(seed) {}

  std::vector<int64_t> Collect(const Window& window);

 private:
  const std::vector<int64_t>& Epoch(int64_t epoch);

  const int64_t samples_;
  const uint64_t seed_;
  std::map<int64_t, std::vector<int64_t>> epochs_;
};

}  // namespace accumulus::engine
