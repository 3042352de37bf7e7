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

namespace {

// One post-norm encoder layer, as torch::nn::TransformerEncoderLayer
// computes it (dropout 0, GELU) and with its parameters, on [N, S, E] and
// with causal attention through scaled_dot_product_attention: the fused
// kernels (flash attention where the device has it) that Python's
// nn.TransformerEncoder reaches when its mask is the causal one. LibTorch's
// own MultiheadAttention materializes the [S, S] scores per head.
torch::Tensor CausalEncoderLayer(torch::nn::TransformerEncoderLayerImpl& layer,
                                 const torch::Tensor& x) {
  torch::nn::MultiheadAttentionImpl& attention = *layer.self_attn;
  const int64_t n = x.size(0), s = x.size(1), e = x.size(2);
  const int64_t heads = attention.options.num_heads();
  const auto split_heads = [&](const torch::Tensor& t) {
    return t.view({n, s, heads, e / heads}).transpose(1, 2);  // [N, H, S, D]
  };
  const std::vector<torch::Tensor> qkv =
      torch::nn::functional::linear(x, attention.in_proj_weight, attention.in_proj_bias)
          .chunk(3, -1);
  const torch::Tensor attended =
      at::scaled_dot_product_attention(split_heads(qkv[0]), split_heads(qkv[1]),
                                       split_heads(qkv[2]), /*attn_mask=*/std::nullopt,
                                       /*dropout_p=*/0.0, /*is_causal=*/true)
          .transpose(1, 2)
          .reshape({n, s, e});
  const torch::Tensor h = layer.norm1(x + attention.out_proj(attended));
  return layer.norm2(h + layer.linear2(torch::gelu(layer.linear1(h))));
}

}  // namespace

torch::Tensor CharLmImpl::forward(torch::Tensor tokens) {
  const int64_t length = tokens.size(1);
  const torch::Tensor position = torch::arange(length, tokens.options());
  torch::Tensor x = tokens_(tokens) + positions_(position).unsqueeze(0);  // [N, S, E]
  // Position i attends to positions <= i only. Padding always comes after a
  // document's tokens, so causal attention alone keeps every real position
  // off the padding; padded positions see real tokens, but their outputs
  // feed only losses that are ignored (kIgnoreIndex), so they contribute no
  // gradient.
  for (size_t i = 0; i < encoder_->layers->size(); ++i) {
    const auto layer = encoder_->layers->ptr<torch::nn::TransformerEncoderLayerImpl>(i);
    auto run = [layer](const torch::Tensor& t) { return CausalEncoderLayer(*layer, t); };
    x = options_.checkpoint_activations ? Checkpoint({run, {layer}}, x) : run(x);
  }
  return head_(norm_(x));
}

}  // namespace accumulus::engine
