// The state of LibTorch's default CPU generator (initialization, dropout,
// random data), saved and put back as a whole: checkpoints carry it, and
// passes that only measure must not advance it.
#pragma once

#include <torch/torch.h>

namespace accumulus::engine {

torch::Tensor CpuRngState();
void RestoreCpuRng(const torch::Tensor& state);

}  // namespace accumulus::engine
