#include "worker/engine/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/checkpoint_frame.h"
#include "worker/engine/cpu_rng.h"
#include "worker/engine/durable_file.h"

namespace accumulus::engine {
namespace {

namespace fs = std::filesystem;

// Files before attempts were recorded in them (step-<N>.ckpt) count as
// attempt 0.
const std::regex kFileName(R"(step-(\d+)(?:\.attempt-(\d+))?\.ckpt)");

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
  return UnframeCheckpoint(file);
}

}  // namespace

CheckpointStore::CheckpointStore(std::string dir, int64_t keep, int64_t attempt)
    : dir_(std::move(dir)), keep_(std::max<int64_t>(1, keep)), attempt_(attempt) {}

std::vector<CheckpointStore::File> CheckpointStore::List() const {
  std::vector<File> out;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir_, error)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (std::regex_match(name, m, kFileName)) {
      out.push_back({std::stoll(m[1]), m[2].matched ? std::stoll(m[2]) : 0, entry.path().string()});
    }
  }
  std::sort(out.begin(), out.end(), [](const File& a, const File& b) {
    return a.step != b.step ? a.step > b.step : a.attempt > b.attempt;
  });
  return out;
}

Status CheckpointStore::CheckNotSuperseded(const std::string& what) const {
  StatusOr<CheckpointLineage> lineage = CheckpointLineage::Read(dir_);
  if (!lineage.ok()) return lineage.status();
  return CheckNotSuperseded(*lineage, what);
}

Status CheckpointStore::CheckNotSuperseded(const CheckpointLineage& lineage,
                                           const std::string& what) const {
  if (const int64_t newer = lineage.NewestAbove(attempt_); newer > 0) {
    return Status::FailedPrecondition("attempt " + std::to_string(attempt_) +
                                      " is superseded by attempt " + std::to_string(newer) + " (" +
                                      (fs::path(dir_) / CheckpointLineage::kFileName).string() +
                                      "): " + what);
  }
  return Status::Ok();
}

Status CheckpointStore::RecordStart(const TrainingState& resumed) {
  return CheckpointLineage::Append(
      dir_, {attempt_, resumed.step, resumed.step > 0 ? resumed.written_by_attempt : 0});
}

StatusOr<std::string> CheckpointStore::Write(const TrainingState& state, const Model& model,
                                             torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  archive.write("job_id", c10::IValue(state.identity.job_id));
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
  archive.write("noise_gradient_sq_norm", c10::IValue(state.noise.gradient_sq_norm_average));
  archive.write("noise_trace", c10::IValue(state.noise.noise_trace_average));
  archive.write("noise_windows", c10::IValue(state.noise.windows));
  archive.write("has_adaptive", c10::IValue(state.has_adaptive));
  archive.write("adaptive_accumulation", c10::IValue(state.adaptive.accumulation));
  archive.write("adaptive_last_change_step", c10::IValue(state.adaptive.last_change_step));
  archive.write("adaptive_unit", c10::IValue(state.adaptive_unit));
  archive.write("position_step", c10::IValue(state.position.step));
  archive.write("position_epoch", c10::IValue(state.position.epoch));
  archive.write("position_offset", c10::IValue(state.position.offset));
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
  const std::string file = FrameCheckpoint(payload);

  std::error_code error;
  fs::create_directories(dir_, error);
  if (error) return FileError("cannot create the checkpoint dir " + dir_, error.value());
  const std::string not_written =
      "its checkpoint after step " + std::to_string(state.step) + " is not written";
  if (Status s = CheckNotSuperseded(not_written); !s.ok()) return s;
  char name[64];
  std::snprintf(name, sizeof name, "step-%08lld.attempt-%lld.ckpt",
                static_cast<long long>(state.step), static_cast<long long>(attempt_));
  const std::string path = (fs::path(dir_) / name).string();
  if (Status s = ReplaceFileDurably(path, file, ".tmp-" + std::to_string(getpid())); !s.ok()) {
    return s;
  }
  // Only after the new one is in place: beyond the newest `keep` of this
  // attempt's history, its own and older attempts' files go (a newer
  // attempt's never do).
  StatusOr<CheckpointLineage> lineage = CheckpointLineage::Read(dir_);
  if (!lineage.ok()) return path;  // kept: nothing is deleted on a doubt
  int64_t kept = 0;
  std::string unused;
  for (const File& f : List()) {
    if (f.attempt > attempt_) continue;
    if (lineage->Allows(f.attempt, f.step, &unused) && kept < keep_) {
      ++kept;
      continue;
    }
    fs::remove(f.path, error);
  }
  return path;
}

StatusOr<TrainingState> CheckpointStore::LoadLatest(const RunIdentity& identity, Model& model,
                                                    torch::optim::Optimizer& optimizer,
                                                    std::vector<std::string>* skipped) {
  StatusOr<CheckpointLineage> lineage = CheckpointLineage::Read(dir_);
  if (!lineage.ok()) return lineage.status();
  if (Status s = CheckNotSuperseded(*lineage, "it does not start"); !s.ok()) return s;
  for (const File& file : List()) {
    const std::string& path = file.path;
    if (file.attempt > attempt_) {
      skipped->push_back(path + ": written by attempt " + std::to_string(file.attempt) +
                         ", newer than this one (" + std::to_string(attempt_) + ")");
      continue;
    }
    if (std::string why; !lineage->Allows(file.attempt, file.step, &why)) {
      skipped->push_back(path + ": " + why);
      continue;
    }
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
      c10::IValue value;
      // Absent from checkpoints written before jobs were recorded in them.
      if (archive.try_read("job_id", value)) state.identity.job_id = value.toStringRef();
      state.identity.seed = static_cast<uint64_t>(ReadInt(archive, "seed"));
      state.identity.global_batch = ReadInt(archive, "global_batch");
      state.identity.samples_per_epoch = ReadInt(archive, "samples_per_epoch");
      state.identity.parameters = ReadInt(archive, "parameters");
      state.step = ReadInt(archive, "step");
      state.applied_steps = ReadInt(archive, "applied_steps");
      state.micro_batch = ReadInt(archive, "micro_batch");
      state.world_size = ReadInt(archive, "world_size");
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
      // Absent from checkpoints written before the noise scale was measured
      // (it then starts afresh) and adaptive accumulation existed.
      if (archive.try_read("noise_windows", value)) {
        state.noise.windows = value.toInt();
        archive.read("noise_gradient_sq_norm", value);
        state.noise.gradient_sq_norm_average = value.toDouble();
        archive.read("noise_trace", value);
        state.noise.noise_trace_average = value.toDouble();
      }
      if (archive.try_read("has_adaptive", value) && value.toBool()) {
        state.has_adaptive = true;
        state.adaptive.accumulation = ReadInt(archive, "adaptive_accumulation");
        state.adaptive.last_change_step = ReadInt(archive, "adaptive_last_change_step");
        state.adaptive_unit = ReadInt(archive, "adaptive_unit");
        state.position.step = ReadInt(archive, "position_step");
        state.position.epoch = ReadInt(archive, "position_epoch");
        state.position.offset = ReadInt(archive, "position_offset");
      }
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
    if (!state.identity.job_id.empty() && state.identity.job_id != identity.job_id) {
      skipped->push_back(path + ": written by job " + state.identity.job_id + ", not by " +
                         (identity.job_id.empty() ? "this run" : "job " + identity.job_id));
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
    state.written_by_attempt = file.attempt;
    return state;
  }
  return Status::NotFound("no checkpoint in " + dir_);
}

}  // namespace accumulus::engine
