// Final parameters as a state-dict archive: torch::pickle_save of a
// {name: tensor} dict, which Python's torch.load reads as a plain dict.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>

#include "common/status.h"

namespace accumulus::engine {

// The module's parameters and buffers (copied to the CPU) as an archive's
// bytes.
std::string StateDictArchive(const torch::nn::Module& module);

// Reads an archive of StateDictArchive's (or by Python's torch.save of a
// dict of tensors with the same pickle protocol).
StatusOr<std::map<std::string, torch::Tensor>> LoadStateDict(const std::string& path);

}  // namespace accumulus::engine
