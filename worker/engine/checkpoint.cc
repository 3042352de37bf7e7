#include "worker/engine/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "worker/engine/cpu_rng.h"

namespace accumulus::engine {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'A', 'C', 'C', 'C', 'K', 'P', 'T', '1'};
constexpr size_t kHeaderBytes = sizeof(kMagic) + 2 * sizeof(uint64_t);
const std::regex kFileName(R"(step-(\d+)\.ckpt)");

uint64_t Fnv1a64(const std::string& data) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

// A failed file operation on a checkpoint, by what a retry would meet:
// a directory the trainer may not write (permissions, a read-only or
// missing mount, a file where a directory should be) or a full disk fails
// the same way on every attempt, so the job fails once, permanently
// (FAILED_PRECONDITION / RESOURCE_EXHAUSTED); anything else (EIO, a
// transient network file system error) may pass on a retry (INTERNAL).
Status FileError(const std::string& what, int error) {
  std::string message = what + ": " + std::strerror(error);
  switch (error) {
    case EACCES:
    case EPERM:
    case EROFS:
    case ENOENT:
    case ENOTDIR:
    case EISDIR:
    case ENAMETOOLONG:
    case ELOOP:
      return Status::FailedPrecondition(std::move(message));
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return Status::ResourceExhausted(std::move(message));
    default:
      return Status::Internal(std::move(message));
  }
}

// Writes `data` to `path` durably: a temporary file in the same directory,
// fsync, rename over `path`, fsync of the directory.
Status WriteFileAtomically(const std::string& path, const std::string& data) {
  const std::string temp = path + ".tmp-" + std::to_string(getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return FileError("cannot create " + temp, errno);
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      return FileError("cannot write " + temp, error);
    }
    written += static_cast<size_t>(n);
  }
  const int synced = ::fsync(fd) == 0 ? 0 : errno;
  const int closed = ::close(fd) == 0 ? 0 : errno;
  if (synced != 0 || closed != 0) {
    const int error = synced != 0 ? synced : closed;
    ::unlink(temp.c_str());
    return FileError("cannot flush " + temp, error);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    return FileError("cannot rename " + temp + " to " + path, error);
  }
  const int dir = ::open(fs::path(path).parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return Status::Ok();
}

std::string Key(const char* kind, size_t i) { return std::string(kind) + "_" + std::to_string(i); }

int64_t ReadInt(torch::serialize::InputArchive& archive, const char* key) {
  c10::IValue value;
  archive.read(key, value);
  return value.toInt();
}

// The checked payload of one file, or why it cannot be used.
StatusOr<std::string> ReadPayload(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open");
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (file.size() < kHeaderBytes || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0) {
    return Status::DataLoss("not an accumulus checkpoint (" + std::to_string(file.size()) +
                            " bytes, no header)");
  }
  uint64_t length = 0;
  uint64_t checksum = 0;
  std::memcpy(&length, file.data() + sizeof kMagic, sizeof length);
  std::memcpy(&checksum, file.data() + sizeof kMagic + sizeof length, sizeof checksum);
  if (file.size() - kHeaderBytes != length) {
    return Status::DataLoss("truncated: " + std::to_string(file.size() - kHeaderBytes) + " of " +
                            std::to_string(length) + " payload bytes");
  }
  std::string payload = file.substr(kHeaderBytes);
  if (Fnv1a64(payload) != checksum) return Status::DataLoss("checksum mismatch (garbled)");
  return payload;
}

}  // namespace

CheckpointStore::CheckpointStore(std::string dir, int64_t keep)
    : dir_(std::move(dir)), keep_(std::max<int64_t>(1, keep)) {}

std::vector<std::pair<int64_t, std::string>> CheckpointStore::List() const {
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir_, error)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (std::regex_match(name, m, kFileName))
      out.emplace_back(std::stoll(m[1]), entry.path().string());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

StatusOr<std::string> CheckpointStore::Write(const TrainingState& state, const Model& model,
                                             torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  archive.write("seed", c10::IValue(static_cast<int64_t>(state.identity.seed)));
  archive.write("global_batch", c10::IValue(state.identity.global_batch));
  archive.write("samples_per_epoch", c10::IValue(state.identity.samples_per_epoch));
  archive.write("parameters", c10::IValue(state.identity.parameters));
  archive.write("step", c10::IValue(state.step));
  archive.write("applied_steps", c10::IValue(state.applied_steps));
  archive.write("micro_batch", c10::IValue(state.micro_batch));
  archive.write("world_size", c10::IValue(state.world_size));
  archive.write("intra_op_threads", c10::IValue(static_cast<int64_t>(state.threads.intra_op)));
  archive.write("blas_threads", c10::IValue(static_cast<int64_t>(state.threads.blas)));
  archive.write("has_loss_scaler", c10::IValue(state.has_loss_scaler));
  archive.write("loss_scale", c10::IValue(state.loss_scaler.scale));
  archive.write("scaler_good_windows", c10::IValue(state.loss_scaler.good_windows));
  archive.write("scaler_skipped", c10::IValue(state.loss_scaler.skipped));
  archive.write("rng", CpuRngState());
  {
    torch::NoGradGuard no_grad;
    const std::vector<torch::Tensor> parameters = model.Parameters();
    for (size_t i = 0; i < parameters.size(); ++i) {
      archive.write(Key("parameter", i), parameters[i].detach().cpu());
    }
    const std::vector<torch::Tensor> buffers = model.Buffers();
    for (size_t i = 0; i < buffers.size(); ++i) {
      archive.write(Key("buffer", i), buffers[i].detach().cpu(), /*is_buffer=*/true);
    }
  }
  torch::serialize::OutputArchive optimizer_archive;
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);

  std::ostringstream payload_stream;
  archive.save_to(payload_stream);
  const std::string payload = payload_stream.str();
  std::string file(kMagic, sizeof kMagic);
  const uint64_t length = payload.size();
  const uint64_t checksum = Fnv1a64(payload);
  file.append(reinterpret_cast<const char*>(&length), sizeof length);
  file.append(reinterpret_cast<const char*>(&checksum), sizeof checksum);
  file += payload;

  std::error_code error;
  fs::create_directories(dir_, error);
  if (error) return FileError("cannot create the checkpoint dir " + dir_, error.value());
  char name[32];
  std::snprintf(name, sizeof name, "step-%08lld.ckpt", static_cast<long long>(state.step));
  const std::string path = (fs::path(dir_) / name).string();
  if (Status s = WriteFileAtomically(path, file); !s.ok()) return s;
  // Only after the new one is in place: the oldest beyond `keep` go.
  const auto present = List();
  for (size_t i = static_cast<size_t>(keep_); i < present.size(); ++i) {
    fs::remove(present[i].second, error);
  }
  return path;
}

StatusOr<TrainingState> CheckpointStore::LoadLatest(const RunIdentity& identity, Model& model,
                                                    torch::optim::Optimizer& optimizer,
                                                    std::vector<std::string>* skipped) {
  for (const auto& [step, path] : List()) {
    StatusOr<std::string> payload = ReadPayload(path);
    if (!payload.ok()) {
      skipped->push_back(path + ": " + payload.status().message());
      continue;
    }
    TrainingState state;
    torch::serialize::InputArchive archive;
    std::vector<torch::Tensor> parameters;
    std::vector<torch::Tensor> buffers;
    torch::Tensor rng;
    try {
      // Tensors straight onto the model's device (the optimizer state too).
      const std::vector<torch::Tensor> current = model.Parameters();
      archive.load_from(payload->data(), payload->size(),
                        current.empty() ? c10::optional<torch::Device>()
                                        : c10::optional<torch::Device>(current[0].device()));
      state.identity.seed = static_cast<uint64_t>(ReadInt(archive, "seed"));
      state.identity.global_batch = ReadInt(archive, "global_batch");
      state.identity.samples_per_epoch = ReadInt(archive, "samples_per_epoch");
      state.identity.parameters = ReadInt(archive, "parameters");
      state.step = ReadInt(archive, "step");
      state.applied_steps = ReadInt(archive, "applied_steps");
      state.micro_batch = ReadInt(archive, "micro_batch");
      state.world_size = ReadInt(archive, "world_size");
      c10::IValue value;
      // Absent from checkpoints written before thread splits were recorded.
      if (archive.try_read("intra_op_threads", value)) {
        state.threads.intra_op = static_cast<int>(value.toInt());
      }
      if (archive.try_read("blas_threads", value)) {
        state.threads.blas = static_cast<int>(value.toInt());
      }
      archive.read("has_loss_scaler", value);
      state.has_loss_scaler = value.toBool();
      archive.read("loss_scale", value);
      state.loss_scaler.scale = value.toDouble();
      state.loss_scaler.good_windows = ReadInt(archive, "scaler_good_windows");
      state.loss_scaler.skipped = ReadInt(archive, "scaler_skipped");
      archive.read("rng", rng);
      for (size_t i = 0; i < model.Parameters().size(); ++i) {
        parameters.emplace_back();
        archive.read(Key("parameter", i), parameters.back());
      }
      for (size_t i = 0; i < model.Buffers().size(); ++i) {
        buffers.emplace_back();
        archive.read(Key("buffer", i), buffers.back(), /*is_buffer=*/true);
      }
    } catch (const c10::Error& e) {
      skipped->push_back(path + ": unreadable archive (" + e.what_without_backtrace() + ")");
      continue;
    }
    if (state.identity.seed != identity.seed ||
        state.identity.global_batch != identity.global_batch ||
        state.identity.samples_per_epoch != identity.samples_per_epoch ||
        state.identity.parameters != identity.parameters) {
      skipped->push_back(path + ": belongs to another run (seed " +
                         std::to_string(state.identity.seed) + ", global batch " +
                         std::to_string(state.identity.global_batch) + ", " +
                         std::to_string(state.identity.samples_per_epoch) + " samples, " +
                         std::to_string(state.identity.parameters) + " parameters)");
      continue;
    }
    // Everything is read and checked; only now does the model change.
    torch::NoGradGuard no_grad;
    const std::vector<torch::Tensor> model_parameters = model.Parameters();
    const std::vector<torch::Tensor> model_buffers = model.Buffers();
    for (size_t i = 0; i < model_parameters.size(); ++i) {
      if (!parameters[i].sizes().equals(model_parameters[i].sizes())) {
        return Status::DataLoss(path + ": parameter " + std::to_string(i) + " has shape " +
                                c10::str(parameters[i].sizes()) + ", the model's is " +
                                c10::str(model_parameters[i].sizes()));
      }
      model_parameters[i].copy_(parameters[i]);
    }
    for (size_t i = 0; i < model_buffers.size(); ++i) model_buffers[i].copy_(buffers[i]);
    try {
      torch::serialize::InputArchive optimizer_archive;
      archive.read("optimizer", optimizer_archive);
      optimizer.load(optimizer_archive);
    } catch (const c10::Error& e) {
      return Status::DataLoss(path + ": optimizer state: " + e.what_without_backtrace());
    }
    RestoreCpuRng(rng.cpu());
    return state;
  }
  return Status::NotFound("no checkpoint in " + dir_);
}

}  // namespace accumulus::engine
