// How a CPU rank divides its cores between LibTorch's intra-op pool and the
// BLAS, chosen by measuring the job's own micro-batch.
//
// No fixed rule wins: a GEMM runs on the BLAS's threads only (LibTorch calls
// sgemm once per matmul), while convolutions, normalization and elementwise
// ops run on the intra-op pool. Measured on 2 cores with OpenBLAS, whose
// threads are its own (bench/README.md): the mlp at micro 256 ran 1.8x
// faster with the cores given to the BLAS, the cnn 1.7x faster with them
// given to LibTorch, and both pools busy at once oversubscribed the cores
// (up to 7x slower: the mlp at micro 4). MKL in PyPI's LibTorch runs on
// LibTorch's own OpenMP threads, so every core to both cannot oversubscribe
// and is a candidate too; measured, it is the fastest or within noise of it
// on every model and split.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace accumulus::engine {

struct ThreadSplit {
  int intra_op = 0;
  int blas = 0;
  bool operator==(const ThreadSplit& o) const { return intra_op == o.intra_op && blas == o.blas; }
};

struct ThreadTrial {
  ThreadSplit split;
  double samples_per_second = 0;
};

// The splits worth measuring for a rank that owns `cores` cores: every core
// to the intra-op pool and one BLAS thread, the reverse, and, where the BLAS
// runs on the intra-op pool's threads (`shared_pool`: MKL), every core to
// both (one split when there is one core).
std::vector<ThreadSplit> CandidateThreadSplits(int cores, bool shared_pool);

// Runs `pass` (forward and backward of `samples` samples) under each
// candidate, the candidates taking turns for `rounds` rounds: in each, an
// untimed pass (in the first round: passes for at least `warmup_seconds`,
// the pools starting) and timed passes for at least `min_seconds / rounds`.
// A candidate's rate is its best round, so that a neighbour's burst on a
// shared machine slows one round of one candidate instead of deciding the
// split (a one-round trial once gave the mlp at micro 4 a split 20% slower:
// bench/README.md). Passes long enough to average over such bursts by
// themselves (rounds × pass ≥ min_seconds) get one round. Returns the trials
// in candidate order and leaves the fastest split applied.
std::vector<ThreadTrial> MeasureThreadSplits(const std::vector<ThreadSplit>& candidates,
                                             int64_t samples, const std::function<void()>& pass,
                                             double min_seconds = 0.25, double warmup_seconds = 0.1,
                                             int rounds = 3);

// The trial with the highest rate (the first on a tie).
ThreadSplit Fastest(const std::vector<ThreadTrial>& trials);

}  // namespace accumulus::engine
