#include "worker/engine/sample_order.h"

#include <algorithm>
#include <numeric>

namespace accumulus::engine {
namespace {

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A uniform integer in [0, bound) without modulo bias (Lemire's method).
uint64_t Below(uint64_t bound, uint64_t* state) {
  while (true) {
    const unsigned __int128 product = static_cast<unsigned __int128>(SplitMix64(state)) * bound;
    const uint64_t low = static_cast<uint64_t>(product);
    if (low >= bound || low >= (-bound) % bound) return static_cast<uint64_t>(product >> 64);
  }
}

}  // namespace

std::vector<int64_t> EpochPermutation(int64_t samples, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(samples));
  std::iota(order.begin(), order.end(), 0);
  // One stream per (seed, epoch): the seed is scrambled first so that nearby
  // seeds and epochs do not give overlapping streams.
  uint64_t seed_state = seed;
  uint64_t state = SplitMix64(&seed_state) ^ (static_cast<uint64_t>(epoch) * 0xD1B54A32D192ED03ULL);
  for (int64_t i = samples - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(Below(static_cast<uint64_t>(i) + 1, &state));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

std::vector<WindowRange> MicroBatchesOf(const WindowRange& window, int64_t micro_batch,
                                        int64_t accumulation_steps, int rank) {
  std::vector<WindowRange> out;
  const int64_t per_rank = micro_batch * accumulation_steps;
  const int64_t rank_begin = std::min(window.end, window.begin + rank * per_rank);
  const int64_t rank_end = std::min(window.end, rank_begin + per_rank);
  for (int64_t b = rank_begin; b < rank_end; b += micro_batch) {
    out.push_back({b, std::min(rank_end, b + micro_batch)});
  }
  return out;
}

std::vector<int64_t> SampleStream::Collect(const Window& window) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(window.size()));
  for (const Segment& s : window.segments) {
    const std::vector<int64_t>& order = Epoch(s.epoch);
    out.insert(out.end(), order.begin() + s.begin, order.begin() + s.end);
  }
  return out;
}

const std::vector<int64_t>& SampleStream::Epoch(int64_t epoch) {
  auto it = epochs_.find(epoch);
  if (it == epochs_.end()) {
    // A window touches at most two epochs; older ones are done.
    while (!epochs_.empty() && epochs_.begin()->first < epoch - 1) epochs_.erase(epochs_.begin());
    it = epochs_.emplace(epoch, EpochPermutation(samples_, seed_, epoch)).first;
  }
  return it->second;
}

}  // namespace accumulus::engine
