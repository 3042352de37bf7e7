#include "worker/engine/micro_batch_graph.h"

#ifdef ACCUMULUS_WITH_CUDA
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <stdexcept>

namespace accumulus::engine {

#ifdef ACCUMULUS_WITH_CUDA
struct MicroBatchGraph::Graphs {
  at::cuda::CUDAGraph forward;
  at::cuda::CUDAGraph backward;
};

namespace {

constexpr size_t kAggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);

c10::CachingAllocator::Stat AllocatedBytes(c10::DeviceIndex device) {
  return c10::cuda::CUDACachingAllocator::getDeviceStats(device).allocated_bytes[kAggregate];
}

bool SameLayout(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && a.device() == b.device();
}

// Autocast's cache of cast weights off for the capture: a cast the cache
// held from before would be read as a constant, and one made inside would be
// recomputed by every replay anyway.
class NoAutocastCache {
 public:
  NoAutocastCache() : was_enabled_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~NoAutocastCache() { at::autocast::set_autocast_cache_enabled(was_enabled_); }
  NoAutocastCache(const NoAutocastCache&) = delete;
  NoAutocastCache& operator=(const NoAutocastCache&) = delete;

 private:
  bool was_enabled_;
};

// Ends a capture that threw, so that the stream and the allocator leave
// capture mode; the capture's own error is the one worth reporting.
void AbandonCapture(at::cuda::CUDAGraph& graph) {
  try {
    graph.capture_end();
  } catch (const std::exception&) {
  }
  graph.reset();
}

}  // namespace

TrainingStream::TrainingStream(const torch::Device& device) {
  if (device.is_cuda()) guard_.emplace(c10::cuda::getStreamFromPool(false, device.index()));
}

bool CanCaptureOn(const torch::Device& device) {
  return device.is_cuda() && c10::cuda::getCurrentCUDAStream(device.index()) !=
                                 c10::cuda::getDefaultCUDAStream(device.index());
}

MicroBatchGraph::MicroBatchGraph(const Batch& batch, const ForwardFn& forward)
    : inputs_{torch::empty_like(batch.inputs), torch::empty_like(batch.targets)},
      graphs_(std::make_unique<Graphs>()) {
  const c10::DeviceIndex device = batch.inputs.device().index();
  // What the capture allocates is what a replay uses: its peak over what
  // was allocated before. (The peak statistic restarts here; the
  // accumulator captures only at a window's start, where it has just been
  // restarted anyway.)
  const int64_t before = AllocatedBytes(device).current;
  c10::cuda::CUDACachingAllocator::resetPeakStats(device);
  NoAutocastCache no_cache;
  Forward captured;
  graphs_->forward.capture_begin();
  try {
    captured = forward(inputs_);
  } catch (...) {
    AbandonCapture(graphs_->forward);
    throw;
  }
  graphs_->forward.capture_end();
  outputs_ = captured.outputs;
  // The backward's buffers come from the forward's pool: its saved
  // activations are freed as the backward consumes them, as in an eager
  // micro-batch.
  graphs_->backward.capture_begin(graphs_->forward.pool());
  try {
    captured.objective.backward();
  } catch (...) {
    AbandonCapture(graphs_->backward);
    graphs_->forward.reset();
    throw;
  }
  graphs_->backward.capture_end();
  working_set_bytes_ = AllocatedBytes(device).peak - before;
}

MicroBatchGraph::~MicroBatchGraph() = default;

bool MicroBatchGraph::Fits(const Batch& batch) const {
  return SameLayout(batch.inputs, inputs_.inputs) && SameLayout(batch.targets, inputs_.targets);
}

void MicroBatchGraph::Load(const Batch& batch) {
  inputs_.inputs.copy_(batch.inputs, /*non_blocking=*/true);
  inputs_.targets.copy_(batch.targets, /*non_blocking=*/true);
}

void MicroBatchGraph::ReplayForward() { graphs_->forward.replay(); }

void MicroBatchGraph::ReplayBackward() { graphs_->backward.replay(); }

#else  // A LibTorch without CUDA: nothing can be captured.

struct MicroBatchGraph::Graphs {};

TrainingStream::TrainingStream(const torch::Device&) {}

bool CanCaptureOn(const torch::Device&) { return false; }

MicroBatchGraph::MicroBatchGraph(const Batch&, const ForwardFn&) {
  throw std::logic_error("CUDA graphs need a CUDA build of LibTorch");
}

MicroBatchGraph::~MicroBatchGraph() = default;

bool MicroBatchGraph::Fits(const Batch&) const { return false; }

void MicroBatchGraph::Load(const Batch&) {}

void MicroBatchGraph::ReplayForward() {}

void MicroBatchGraph::ReplayBackward() {}

#endif

}  // namespace accumulus::engine
