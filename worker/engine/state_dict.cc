#include "worker/engine/state_dict.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace accumulus::engine {

Status SaveStateDict(const torch::nn::Module& module, const std::string& path) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& item : module.named_parameters()) dict.insert(item.key(), item.value().cpu());
  for (const auto& item : module.named_buffers()) dict.insert(item.key(), item.value().cpu());
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));

  const std::string temporary = path + ".tmp";
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Internal("cannot write " + temporary + ": " + std::strerror(errno));
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string error = std::strerror(errno);
      close(fd);
      return Status::Internal("cannot write " + temporary + ": " + error);
    }
    written += static_cast<size_t>(n);
  }
  const bool synced = fsync(fd) == 0;
  close(fd);
  if (!synced || rename(temporary.c_str(), path.c_str()) != 0) {
    return Status::Internal("cannot write " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
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
