#include "worker/engine/activation_checkpoint.h"

#include <ATen/autocast_mode.h>

namespace accumulus::engine {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The thread's autocast settings, captured at forward and re-entered for the
// recomputation (backward runs outside the forward's autocast scope).
struct AutocastState {
  bool cpu_enabled = false;
  bool gpu_enabled = false;
  at::ScalarType cpu_dtype = at::kBFloat16;
  at::ScalarType gpu_dtype = at::kHalf;
  bool cache_enabled = true;

  static AutocastState Current() {
    AutocastState s;
    s.cpu_enabled = at::autocast::is_autocast_enabled(at::kCPU);
    s.gpu_enabled = at::autocast::is_autocast_enabled(at::kCUDA);
    s.cpu_dtype = at::autocast::get_autocast_dtype(at::kCPU);
    s.gpu_dtype = at::autocast::get_autocast_dtype(at::kCUDA);
    s.cache_enabled = at::autocast::is_autocast_cache_enabled();
    return s;
  }

  void Apply() const {
    at::autocast::set_autocast_enabled(at::kCPU, cpu_enabled);
    at::autocast::set_autocast_enabled(at::kCUDA, gpu_enabled);
    at::autocast::set_autocast_dtype(at::kCPU, cpu_dtype);
    at::autocast::set_autocast_dtype(at::kCUDA, gpu_dtype);
    at::autocast::set_autocast_cache_enabled(cache_enabled);
  }
};

// Runs a scope under `state`, without autocast's weight-cast cache: a cast
// cached by the no-grad forward carries no autograd history, and the
// recomputation must not pick it up.
class ScopedAutocast {
 public:
  explicit ScopedAutocast(AutocastState state) : outer_(AutocastState::Current()) {
    state.cache_enabled = false;
    state.Apply();
  }
  ~ScopedAutocast() { outer_.Apply(); }
  ScopedAutocast(const ScopedAutocast&) = delete;
  ScopedAutocast& operator=(const ScopedAutocast&) = delete;

 private:
  const AutocastState outer_;
};

// What backward needs besides the block's input, carried in the autograd
// context as a capsule.
struct SavedBlock : torch::CustomClassHolder {
  SavedBlock(CheckpointBlock b, AutocastState a) : block(std::move(b)), autocast(a) {}
  CheckpointBlock block;
  AutocastState autocast;
};

std::vector<torch::Tensor> ParametersOf(const CheckpointBlock& block) {
  std::vector<torch::Tensor> out;
  for (const auto& m : block.modules) {
    for (const auto& p : m->parameters()) out.push_back(p);
  }
  return out;
}

std::vector<torch::Tensor> BuffersOf(const CheckpointBlock& block) {
  std::vector<torch::Tensor> out;
  for (const auto& m : block.modules) {
    for (const auto& b : m->buffers()) out.push_back(b);
  }
  return out;
}

// The autograd node: forward without history; backward recomputes the block
// with history and differentiates it. Its inputs are the block's input and
// parameters, so the parameters' gradients reach their accumulators the usual
// way (summing across a window's micro-batches).
class Recompute : public torch::autograd::Function<Recompute> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input,
                               torch::TensorList /*parameters*/,
                               const c10::intrusive_ptr<SavedBlock>& saved) {
    ctx->save_for_backward({input});
    ctx->saved_data["block"] = c10::IValue::make_capsule(saved);
    ScopedAutocast autocast(saved->autocast);
    return saved->block.forward(input);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved =
        c10::static_intrusive_pointer_cast<SavedBlock>(ctx->saved_data["block"].toCapsule());
    const torch::Tensor input = ctx->get_saved_variables()[0];
    const torch::Tensor x = input.detach().requires_grad_(input.requires_grad());
    const std::vector<torch::Tensor> parameters = ParametersOf(saved->block);

    std::vector<torch::Tensor> buffers = BuffersOf(saved->block);
    std::vector<torch::Tensor> buffers_before;
    for (const auto& b : buffers) buffers_before.push_back(b.clone());
    torch::Tensor output;
    {
      torch::AutoGradMode grad_mode(true);
      ScopedAutocast autocast(saved->autocast);
      output = saved->block.forward(x);
    }
    std::vector<torch::Tensor> wrt;
    if (x.requires_grad()) wrt.push_back(x);
    for (const auto& p : parameters) {
      if (p.requires_grad()) wrt.push_back(p);
    }
    const variable_list grads =
        torch::autograd::grad({output}, wrt, {grad_outputs[0]}, /*retain_graph=*/false,
                              /*create_graph=*/false, /*allow_unused=*/true);
    // After the backward: BatchNorm's backward reads the running statistics
    // it saved, and must find them unmodified.
    {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(buffers_before[i]);
    }
    // One gradient per forward input: input, each parameter, the capsule.
    variable_list out;
    size_t next = 0;
    out.push_back(x.requires_grad() ? grads[next++] : torch::Tensor());
    for (const auto& p : parameters)
      out.push_back(p.requires_grad() ? grads[next++] : torch::Tensor());
    out.push_back(torch::Tensor());
    return out;
  }
};

}  // namespace

torch::Tensor Checkpoint(const CheckpointBlock& block, const torch::Tensor& input) {
  if (!torch::GradMode::is_enabled()) return block.forward(input);
  const std::vector<torch::Tensor> parameters = ParametersOf(block);
  return Recompute::apply(input, torch::TensorList(parameters),
                          c10::make_intrusive<SavedBlock>(block, AutocastState::Current()));
}

}  // namespace accumulus::engine
