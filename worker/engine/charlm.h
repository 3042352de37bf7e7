// The built-in character language model: a small causal transformer over
// bytes (learned token and position embeddings, TransformerEncoderLayers
// under a causal mask, a final LayerNorm and a Linear head over the byte
// vocabulary). Dropout is off: with it, k micro-batches
// could not reproduce one batch.
#pragma once

#include <torch/torch.h>

namespace accumulus::engine {

struct CharLmOptions {
  int64_t vocabulary = 257;
  int64_t pad_token = 256;
  int64_t max_length = 64;
  int64_t d_model = 128;
  int64_t heads = 4;
  int64_t layers = 2;
  // Each encoder layer keeps only its input for backward.
  bool checkpoint_activations = false;
};

class CharLmImpl : public torch::nn::Module {
 public:
  explicit CharLmImpl(const CharLmOptions& options);
  // tokens [batch, length] → logits [batch, length, vocabulary].
  torch::Tensor forward(torch::Tensor tokens);

 private:
  CharLmOptions options_;
  torch::nn::Embedding tokens_{nullptr};
  torch::nn::Embedding positions_{nullptr};
  torch::nn::TransformerEncoder encoder_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
  torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(CharLm);

}  // namespace accumulus::engine
