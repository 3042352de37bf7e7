#include "worker/engine/state_dict.h"

#include <fstream>
#include <iterator>

namespace accumulus::engine {

std::string StateDictArchive(const torch::nn::Module& module) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& item : module.named_parameters()) dict.insert(item.key(), item.value().cpu());
  for (const auto& item : module.named_buffers()) dict.insert(item.key(), item.value().cpu());
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
  return std::string(bytes.begin(), bytes.end());
}

StatusOr<std::map<std::string, torch::Tensor>> LoadStateDict(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  try {
    const c10::IValue value = torch::pickle_load(bytes);
    if (!value.isGenericDict()) {
      return Status::DataLoss(path + ": not a dict of tensors");
    }
    std::map<std::string, torch::Tensor> out;
    for (const auto& entry : value.toGenericDict()) {
      if (!entry.key().isString() || !entry.value().isTensor()) {
        return Status::DataLoss(path + ": an entry is not a string → tensor pair");
      }
      out[entry.key().toStringRef()] = entry.value().toTensor();
    }
    return out;
  } catch (const c10::Error& e) {
    return Status::DataLoss(path + ": " + e.what_without_backtrace());
  }
}

}  // namespace accumulus::engine
