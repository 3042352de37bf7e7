// Final parameters as a state-dict archive: torch::pickle_save of a
// {name: tensor} dict, which Python's torch.load reads as a plain dict.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>

#include "common/status.h"

namespace accumulus::engine {

// Writes the module's parameters and buffers (on the CPU) to `path`
// atomically: a temporary file, fsync, rename.
Status SaveStateDict(const torch::nn::Module& module, const std::string& path);

// Reads an archive written by SaveStateDict (or by Python's torch.save of a
// dict of tensors with the same pickle protocol).
StatusOr<std::map<std::string, torch::Tensor>> LoadStateDict(const std::string& path);

}  // namespace accumulus::engine
