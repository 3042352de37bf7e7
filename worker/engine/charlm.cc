#include "worker/engine/charlm.h"

#include "worker/engine/activation_checkpoint.h"

namespace accumulus::engine {

CharLmImpl::CharLmImpl(const CharLmOptions& options) : options_(options) {
  tokens_ = register_module("tokens", torch::nn::Embedding(options.vocabulary, options.d_model));
  positions_ =
      register_module("positions", torch::nn::Embedding(options.max_length, options.d_model));
  auto layer = torch::nn::TransformerEncoderLayerOptions(options.d_model, options.heads)
                   .dim_feedforward(4 * options.d_model)
                   .dropout(0.0)
                   .activation(torch::kGELU);
  encoder_ = register_module(
      "encoder",
      torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(layer, options.layers)));
  norm_ =
      register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({options.d_model})));
  head_ = register_module("head", torch::nn::Linear(options.d_model, options.vocabulary));
}

torch::Tensor CharLmImpl::forward(torch::Tensor tokens) {
  const int64_t length = tokens.size(1);
  const torch::Tensor position = torch::arange(length, tokens.options());
  torch::Tensor x = tokens_(tokens) + positions_(position).unsqueeze(0);  // [N, S, E]
  // Position i attends to positions <= i only. Padding always comes after a
  // document's tokens, so this causal mask alone keeps every real position
  // off the padding; padded positions see real tokens, but their outputs
  // feed only losses that are ignored (kIgnoreIndex), so they contribute no
  // gradient, and one additive mask serves every precision.
  const torch::Tensor causal =
      torch::full({length, length}, -std::numeric_limits<float>::infinity(),
                  x.options().dtype(torch::kFloat32))
          .triu(1);
  x = x.transpose(0, 1);  // [S, N, E], the encoder's layout
  if (options_.checkpoint_activations) {
    for (size_t i = 0; i < encoder_->layers->size(); ++i) {
      const auto layer = encoder_->layers->ptr<torch::nn::TransformerEncoderLayerImpl>(i);
      x = Checkpoint(
          {[layer, causal](const torch::Tensor& t) { return layer->forward(t, causal); }, {layer}},
          x);
    }
  } else {
    x = encoder_(x, causal);
  }
  x = x.transpose(0, 1);  // [N, S, E]
  return head_(norm_(x));
}

}  // namespace accumulus::engine
