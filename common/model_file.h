// A `torchscript` job's model file, checked for what it is before LibTorch
// loads it. Users bring what PyTorch saves: torch.save's state dicts and
// pickled modules, torch.export programs (.pt2), weights in safetensors.
// None of them is TorchScript, and torch.jit.load says of each only that
// "constants.pkl" is missing and the file is probably corrupted. A file
// torch.jit.save did not write is named for what it is, with what to do.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace accumulus {

// OK where the file at `path` is laid out as torch.jit.save lays a module
// out (a zip archive with ROOT/data.pkl, ROOT/constants.pkl and ROOT/code/),
// told from its zip directory and never from its pickles, which are not
// run. Else INVALID_ARGUMENT "FIELD PATH: " and what the file is and how to
// save a module as TorchScript; NOT_FOUND where it cannot be opened.
Status CheckTorchScriptFile(const std::string& field, const std::string& path);

// The same for a file's bytes (`path` names it in the message).
Status CheckTorchScriptBytes(const std::string& field, const std::string& path,
                             std::string_view bytes);

}  // namespace accumulus
