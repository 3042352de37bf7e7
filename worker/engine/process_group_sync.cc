#include "worker/engine/process_group_sync.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace accumulus::engine {
namespace {

using Clock = std::chrono::steady_clock;

// Waits for a collective. A peer that is gone or late surfaces as whatever
// the backend throws: NCCL a c10::DistBackendError, Gloo its own exception
// (a std::runtime_error, "Read error ... Connection reset by peer"). Each
// leaves as a c10::DistBackendError, so that training reports a failure of
// its peers (Fault::kPeers) and not an internal error.
void Await(const c10::intrusive_ptr<c10d::Work>& work) {
  try {
    work->wait();
  } catch (const c10::Error&) {
    throw;  // DistBackendError already, or LibTorch's own (out of memory)
  } catch (const std::exception& e) {
    C10_THROW_ERROR(DistBackendError, e.what());
  }
}

class ProcessGroupSync final : public GradientSync {
 public:
  ProcessGroupSync(c10::intrusive_ptr<c10d::Backend> group, c10::Device device, int rank,
                   int world_size, int64_t bucket_bytes)
      : group_(std::move(group)),
        device_(device),
        rank_(rank),
        world_size_(world_size),
        bucket_bytes_(bucket_bytes) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  void AllReduce(const std::vector<torch::Tensor>& parameters, torch::Tensor& counters,
                 SyncStats* stats) override {
    const auto start = Clock::now();
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> grads;
    for (const auto& p : parameters) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      grads.push_back(p.grad());
    }
    // Buckets of consecutive gradients of one dtype and device, up to
    // bucket_bytes each (a gradient larger than that is a bucket alone).
    size_t begin = 0;
    while (begin < grads.size()) {
      size_t end = begin;
      int64_t bytes = 0;
      while (end < grads.size() &&
             (end == begin || (bytes + Bytes(grads[end]) <= bucket_bytes_ &&
                               grads[end].scalar_type() == grads[begin].scalar_type() &&
                               grads[end].device() == grads[begin].device()))) {
        bytes += Bytes(grads[end]);
        ++end;
      }
      ReduceBucket(grads, begin, end, stats);
      begin = end;
    }
    // NCCL reduces device tensors only; the counters are a few host doubles.
    std::vector<torch::Tensor> counter_list{counters.to(device_)};
    Run(counter_list, stats);
    if (!counter_list[0].is_same(counters)) counters.copy_(counter_list[0]);
    stats->seconds += std::chrono::duration<double>(Clock::now() - start).count();
  }

  int64_t MinAcrossRanks(int64_t value) override {
    std::vector<torch::Tensor> one{torch::tensor({value}, torch::kInt64).to(device_)};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::MIN;
    Await(group_->allreduce(one, options));
    return one[0].item<int64_t>();
  }

  void Broadcast(const std::vector<torch::Tensor>& tensors) override {
    torch::NoGradGuard no_grad;
    for (const auto& t : tensors) {
      std::vector<torch::Tensor> one{t.detach()};
      Await(group_->broadcast(one));
    }
  }

 private:
  static int64_t Bytes(const torch::Tensor& t) {
    return t.numel() * static_cast<int64_t>(t.element_size());
  }

  void ReduceBucket(const std::vector<torch::Tensor>& grads, size_t begin, size_t end,
                    SyncStats* stats) {
    std::vector<torch::Tensor> flat_parts;
    for (size_t i = begin; i < end; ++i) flat_parts.push_back(grads[i].reshape({-1}));
    std::vector<torch::Tensor> bucket{end - begin == 1 ? grads[begin] : torch::cat(flat_parts)};
    Run(bucket, stats);
    if (end - begin == 1) return;  // reduced in place
    int64_t offset = 0;
    for (size_t i = begin; i < end; ++i) {
      const int64_t n = grads[i].numel();
      grads[i].copy_(bucket[0].narrow(0, offset, n).view_as(grads[i]));
      offset += n;
    }
  }

  void Run(std::vector<torch::Tensor>& tensors, SyncStats* stats) {
    Await(group_->allreduce(tensors));
    ++stats->allreduce_calls;
    stats->bytes += Bytes(tensors[0]);
  }

  c10::intrusive_ptr<c10d::Backend> group_;
  const c10::Device device_;
  const int rank_;
  const int world_size_;
  const int64_t bucket_bytes_;
};

// The backend for the ranks' tensors: NCCL when they are on CUDA, Gloo on CPU.
StatusOr<c10::intrusive_ptr<c10d::Backend>> MakeGroup(
    const ProcessGroupConfig& config, const c10::intrusive_ptr<c10d::Store>& store) {
  if (config.device.is_cuda()) {
#ifdef USE_C10D_NCCL
    // Blocking wait turns a lost peer into an error after config.timeout
    // instead of a hang inside the NCCL kernel.
    setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = config.timeout;
    return c10::intrusive_ptr<c10d::Backend>(c10::make_intrusive<c10d::ProcessGroupNCCL>(
        store, config.rank, config.world_size, options));
#else
    return Status::FailedPrecondition("device \"" + config.device.str() +
                                      "\": this LibTorch was built without NCCL, the backend "
                                      "CUDA ranks synchronise with");
#endif
  }
  auto options = c10d::ProcessGroupGloo::Options::create(config.timeout);
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(config.local_address));
  options->threads = 1;
  return c10::intrusive_ptr<c10d::Backend>(
      c10::make_intrusive<c10d::ProcessGroupGloo>(store, config.rank, config.world_size, options));
}

}  // namespace

StatusOr<std::unique_ptr<GradientSync>> ConnectProcessGroup(const ProcessGroupConfig& config) {
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(config.rendezvous_port);
    store_options.isServer = config.rank == 0;
    store_options.numWorkers = static_cast<size_t>(config.world_size);
    store_options.waitWorkers = true;
    store_options.timeout = config.timeout;
    auto store = c10::make_intrusive<c10d::TCPStore>(config.rendezvous_host, store_options);

    StatusOr<c10::intrusive_ptr<c10d::Backend>> group = MakeGroup(config, store);
    if (!group.ok()) return group.status();
    return std::unique_ptr<GradientSync>(new ProcessGroupSync(
        *std::move(group), config.device, config.rank, config.world_size, config.bucket_bytes));
  } catch (const c10::Error& e) {
    return Status::Unavailable(
        "rank " + std::to_string(config.rank) + " of " + std::to_string(config.world_size) +
        ": rendezvous at " + config.rendezvous_host + ":" + std::to_string(config.rendezvous_port) +
        " failed: " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Status::Unavailable("rank " + std::to_string(config.rank) + " of " +
                               std::to_string(config.world_size) + ": rendezvous at " +
                               config.rendezvous_host + ":" +
                               std::to_string(config.rendezvous_port) + " failed: " + e.what());
  }
}

}  // namespace accumulus::engine
