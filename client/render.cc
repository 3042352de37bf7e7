#include "client/render.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <sstream>
#include <vector>

#include "client/noise_advice.h"
#include "client/terminal_text.h"
#include "common/device_name.h"
#include "common/enum_names.h"
#include "common/job_attempts.h"

namespace accumulus::client {
namespace {

std::string RanksText(const v1::StepMetrics& m);

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// Rows of cells as aligned text: each column as wide as its widest cell,
// two spaces between columns, the last column unpadded.
std::string AlignedTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], DisplayWidth(row[i]));
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      out += row[i];
      if (i + 1 < row.size()) out += std::string(widths[i] - DisplayWidth(row[i]) + 2, ' ');
    }
    out += "\n";
  }
  return out;
}

std::string BatchText(const v1::BatchPlan& b) {
  if (b.micro_batch() == 0) {
    return std::to_string(b.global_batch()) + " = auto×" + std::to_string(b.devices());
  }
  return std::to_string(b.global_batch()) + " = " + std::to_string(b.micro_batch()) + "×" +
         std::to_string(b.accumulation_steps()) + "×" + std::to_string(b.devices());
}

// Data-parallel steps: each rank's all-reduce work, e.g.
// "  ranks: 0@w1 2 all-reduces 1.2 MiB 3.1 ms, 1@w2 2 all-reduces 1.2 MiB 2.9 ms".
// Tensors held at the window's end and at its peak, the process's RSS, and on
// CUDA what the caching allocator reserved and how often it had to retry.
std::string MemoryText(const v1::StepMetrics& m) {
  std::string out = "tensors " + HumanBytes(m.tensor_bytes()) + " (peak " +
                    HumanBytes(m.tensor_peak_bytes()) + ")  rss " +
                    HumanBytes(m.process_rss_bytes());
  if (m.allocator_reserved_bytes() > 0)
    out += "  reserved " + HumanBytes(m.allocator_reserved_bytes());
  if (m.allocator_retries() > 0)
    out += "  " + std::to_string(m.allocator_retries()) + " alloc retries";
  return out;
}

std::string RanksText(const v1::StepMetrics& m) {
  if (m.ranks_size() == 0) return "";
  std::string out = "  ranks:";
  for (const auto& r : m.ranks()) {
    out += " " + std::to_string(r.rank()) + "@" + r.worker_id() + " " +
           std::to_string(r.allreduce_calls()) + " all-reduces " + HumanBytes(r.allreduce_bytes()) +
           " " + Format("%.1f ms", r.comm_seconds() * 1000) + " peak " +
           HumanBytes(r.tensor_peak_bytes()) + ",";
  }
  out.pop_back();
  return out;
}

// "intra-op 1, inter-op 1, BLAS 2, measured: 2+1 10962/s 1+2 19501/s
// (OpenBLAS ...)": the counts in force and, where the rank measured them,
// each candidate split (intra-op + BLAS threads) and its rate.
std::string ThreadsText(const v1::RuntimeInfo& r) {
  std::string out = "intra-op " + std::to_string(r.intra_op_threads()) + ", inter-op " +
                    std::to_string(r.inter_op_threads()) + ", BLAS " +
                    std::to_string(r.blas_threads());
  if (r.threads_source() == v1::THREADS_SOURCE_MEASURED) {
    out += ", measured:";
    for (const auto& t : r.thread_trials()) {
      out += " " + std::to_string(t.intra_op_threads()) + "+" + std::to_string(t.blas_threads()) +
             " " + Format("%.0f", t.samples_per_second()) + "/s";
    }
  } else if (r.threads_source() == v1::THREADS_SOURCE_CHECKPOINT) {
    out += ", as measured before the checkpoint";
  }
  return out + " (" + r.blas() + ")";
}

// A file's samples are known once a trainer has read it: until then the
// spec's 0 is no count.
std::string SamplesText(const v1::Job& j) {
  const int64_t read = j.has_runtime() ? j.runtime().samples_per_epoch() : 0;
  const int64_t samples = read > 0 ? read : j.spec().data().samples();
  if (samples > 0) return std::to_string(samples) + " samples";
  return "samples counted when a trainer reads " + TerminalSafe(j.spec().data().path());
}

}  // namespace

std::string ToJsonLine(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

std::string BatchSplit(const v1::BatchPlan& b) {
  const std::string micro = b.micro_batch() == 0
                                ? "auto (measured by the trainer)"
                                : std::to_string(b.micro_batch()) + " × accumulation " +
                                      std::to_string(b.accumulation_steps());
  return std::to_string(b.global_batch()) + " = micro " + micro + " × devices " +
         std::to_string(b.devices());
}

std::string StateName(v1::JobState state) {
  std::string name = v1::JobState_Name(state).substr(std::string("JOB_STATE_").size());
  std::transform(name.begin(), name.end(), name.begin(), ::tolower);
  return name;
}

std::string HumanRate(double per_second) {
  if (per_second >= 1e6) return Format("%.2fM", per_second / 1e6);
  if (per_second >= 1e3) return Format("%.1fk", per_second / 1e3);
  return Format("%.0f", per_second);
}

std::string HumanBytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) return Format("%.2f GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return Format("%.1f MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return Format("%.1f KiB", b / 1024.0);
  return std::to_string(bytes) + " B";
}

std::string JobTable(const v1::ListJobsResponse& jobs) {
  std::vector<std::vector<std::string>> rows{
      {"ID", "STATE", "NAME", "OWNER", "BATCH (g = m×k×d)", "STEPS", "LOSS", "WORKER"}};
  for (const auto& j : jobs.jobs()) {
    rows.push_back({TerminalSafe(j.id()), StateName(j.state()),
                    j.name().empty() ? "-" : TerminalSafe(j.name()),
                    j.owner().empty() ? "-" : TerminalSafe(j.owner()), BatchText(j.batch()),
                    std::to_string(j.steps_done()) + "/" + std::to_string(j.steps_total()),
                    j.has_loss() ? Format("%.4f", j.loss()) : "-",
                    j.worker_id().empty() ? "-" : TerminalSafe(j.worker_id())});
  }
  std::string table = AlignedTable(rows);
  if (!jobs.next_page_token().empty()) table += "(more: raise --limit)\n";
  return table;
}

std::string JobDetails(const v1::Job& j) {
  std::ostringstream out;
  const v1::JobSpec& s = j.spec();
  out << "job:          " << TerminalSafe(j.id())
      << (s.name().empty() ? "" : " (" + TerminalSafe(s.name()) + ")") << "\n"
      << "state:        " << StateName(j.state())
      << (j.failure_class() == v1::FAILURE_CLASS_UNSPECIFIED
              ? ""
              : " (" + NameOf(j.failure_class()) + ")")
      << (j.reason().empty() ? "" : ": " + TerminalSafe(j.reason())) << "\n"
      << "owner:        " << (j.owner().empty() ? "-" : TerminalSafe(j.owner())) << "\n";
  if (!s.labels().empty()) {
    // In key order: a map's own order is arbitrary.
    std::vector<std::pair<std::string, std::string>> labels(s.labels().begin(), s.labels().end());
    std::sort(labels.begin(), labels.end());
    std::string text;
    for (const auto& [key, value] : labels) {
      text += (text.empty() ? "" : ", ") + TerminalSafe(key) + "=" + TerminalSafe(value);
    }
    out << "labels:       " << text << "\n";
  }
  out << "worker:       " << (j.worker_id().empty() ? "-" : TerminalSafe(j.worker_id())) << "\n"
      << "batch:        global " << BatchSplit(j.batch()) << "\n"
      << (s.adaptive_batch().max_global_batch() > 0
              ? "adaptive:     global batch follows the noise scale within [" +
                    std::to_string(s.adaptive_batch().min_global_batch()) + ", " +
                    std::to_string(s.adaptive_batch().max_global_batch()) + "]\n"
              : "")
      << "normalization:"
      << " " << NameOf(s.normalization()) << "\n"
      << "model:        " << NameOf(s.model().kind()) << "\n"
      << "data:         " << NameOf(s.data().kind()) << " " << NameOf(s.data().task()) << ", "
      << SamplesText(j) << "\n"
      << "optimizer:    " << NameOf(s.optimizer().kind()) << " lr " << s.optimizer().lr() << "\n"
      << "steps:        " << j.steps_done() << "/" << j.steps_total() << "\n";
  if (!s.output().empty()) {
    out << "output:       " << TerminalSafe(s.output())
        << (j.worker_id().empty() ? "" : " (on worker " + TerminalSafe(j.worker_id()) + ")")
        << "\n";
  }
  for (const auto& p : j.placements()) {
    out << "rank " << p.rank() << ":       " << TerminalSafe(p.device()) << " on "
        << TerminalSafe(p.worker_id()) << "\n";
  }
  if (j.has_runtime()) out << "threads:      " << ThreadsText(j.runtime()) << "\n";
  if (j.attempt() > 1 || j.spec().max_restarts() > 0) {
    out << "attempt:      " << j.attempt() << " (restarts spent: " << RestartsUsed(j) << " of "
        << j.spec().max_restarts() << ")\n";
  }
  for (const auto& a : j.attempts()) {
    out << "  attempt " << a.number() << " ended after step " << a.last_step()
        << (a.failure_class() == v1::FAILURE_CLASS_UNSPECIFIED
                ? ""
                : " (" + NameOf(a.failure_class()) + ")")
        << ": " << TerminalSafe(a.reason())
        << (SpendsNoRestart(a.failure_class()) ? " (no restart spent)" : "")
        << (a.resumed_by_request() ? "; resumed by request (restarts afresh)" : "") << "\n";
  }
  if (j.has_last_step()) {
    const v1::StepMetrics& m = j.last_step();
    out << "last step:    loss " << Format("%.6f", m.loss()) << ", grad norm "
        << Format("%.4g", m.grad_norm()) << ", " << HumanRate(m.samples_per_second())
        << " samples/s\n"
        << "memory:       " << MemoryText(m) << "\n";
    if (const std::string advice = NoiseScaleAdvice(j.batch(), m); !advice.empty()) {
      out << "noise scale:  " << advice << "\n";
    }
  }
  return out.str();
}

std::string WorkerTable(const v1::ListWorkersResponse& workers) {
  std::vector<std::vector<std::string>> rows{{"WORKER", "DEVICE", "CORES", "MEMORY", "JOB"}};
  for (const auto& w : workers.workers()) {
    for (int i = 0; i < w.devices_size(); ++i) {
      const v1::Device& d = w.devices(i);
      const std::string job = i < w.device_jobs_size() ? w.device_jobs(i) : "";
      rows.push_back({i == 0 ? TerminalSafe(w.id()) : "", DeviceName(d), std::to_string(d.cores()),
                      HumanBytes(d.memory_bytes()), job.empty() ? "free" : TerminalSafe(job)});
    }
  }
  return AlignedTable(rows);
}

std::string EventLine(const v1::JobEvent& e) {
  // A superseded attempt's event is shown for the record, marked as such.
  if (e.stale()) {
    v1::JobEvent fresh = e;
    fresh.set_stale(false);
    return "stale (attempt " + std::to_string(e.attempt()) + ", superseded) " + EventLine(fresh);
  }
  if (e.has_step()) {
    const v1::StepMetrics& m = e.step();
    return "step " + std::to_string(m.step()) + "/" + std::to_string(m.steps_total()) +
           (m.attempt() > 1 ? " (attempt " + std::to_string(m.attempt()) + ")" : "") + "  epoch " +
           std::to_string(m.epoch()) + "  loss " + Format("%.6f", m.loss()) + "  lr " +
           Format("%.4g", m.lr()) + "  grad_norm " + Format("%.4g", m.grad_norm()) +
           (m.clipped() ? " (clipped)" : "") +
           (m.skipped() ? "  SKIPPED (inf/NaN gradient; loss scale now lower)" : "") +
           (m.loss_scale() != 0 && m.loss_scale() != 1 ? "  scale " + Format("%.0f", m.loss_scale())
                                                       : "") +
           "  window " + std::to_string(m.microbatches()) + "×micro, " +
           std::to_string(m.samples()) + "/" + std::to_string(m.effective_batch()) + " samples  " +
           (m.noise().noise_scale() > 0 ? "B_noise " + HumanCount(m.noise().noise_scale()) +
                                              (m.noise().tokens() ? " tokens  " : "  ")
                                        : "") +
           HumanRate(m.samples_per_second()) + " samples/s  " + MemoryText(m) + RanksText(m);
  }
  if (e.has_state()) {
    return "state " + StateName(e.state().state()) +
           (e.state().worker_id().empty() ? "" : " on " + TerminalSafe(e.state().worker_id())) +
           (e.state().reason().empty() ? "" : ": " + TerminalSafe(e.state().reason()));
  }
  if (e.has_runtime()) {
    const v1::RuntimeInfo& r = e.runtime();
    std::string ramp;
    for (int64_t k : r.accumulation_ramp()) ramp += (ramp.empty() ? "" : ",") + std::to_string(k);
    std::string probe;
    for (const auto& p : r.probe()) {
      probe += "\n      probe micro_batch " + std::to_string(p.micro_batch()) + ": peak " +
               HumanBytes(p.peak_bytes()) + (p.fits() ? "  fits" : "  does not fit");
    }
    return "plan  " + std::to_string(r.steps_total()) + " steps (" +
           std::to_string(r.steps_per_epoch()) + " in the first epoch of " +
           std::to_string(r.samples_per_epoch()) +
           " samples, partial window: " + NameOf(r.partial_window()) + "), batch " +
           BatchText(r.batch()) + (ramp.empty() ? "" : " (accumulation ramps " + ramp + ")") +
           ", lr " + Format("%.4g", r.lr_first()) + " → " + Format("%.4g", r.lr_last()) + ", " +
           std::to_string(r.parameters()) + " parameters\n" + "      rank " +
           std::to_string(r.rank()) + "/" + std::to_string(r.world_size()) + " on " +
           TerminalSafe(r.device()) + " (pid " + std::to_string(r.pid()) +
           "), threads: " + ThreadsText(r) + ", LibTorch " + r.torch_version() + probe +
           (r.resumed_from_step() > 0
                ? "\n      resumed after step " + std::to_string(r.resumed_from_step()) +
                      " from a checkpoint"
                : "");
  }
  if (e.has_split()) {
    return "split rank " + std::to_string(e.split().rank()) + " from step " +
           std::to_string(e.split().step()) + ": micro_batch " +
           std::to_string(e.split().micro_batch()) + " × accumulation " +
           std::to_string(e.split().accumulation_steps()) + " (" +
           TerminalSafe(e.split().reason()) + ")";
  }
  if (e.has_batch_change()) {
    const v1::BatchChange& b = e.batch_change();
    return "batch from step " + std::to_string(b.step()) + ": global " +
           std::to_string(b.previous_global_batch()) + " → " + std::to_string(b.global_batch()) +
           " (accumulation " + std::to_string(b.accumulation_steps()) + "), lr " +
           Format("%.4g", b.lr()) + ": " + TerminalSafe(b.reason());
  }
  if (e.has_checkpoint()) {
    char size[64];
    std::snprintf(size, sizeof size, " (%.1f MB in %.2f s)",
                  static_cast<double>(e.checkpoint().bytes()) / 1e6, e.checkpoint().seconds());
    return "checkpoint after step " + std::to_string(e.checkpoint().step()) + ": " +
           TerminalSafe(e.checkpoint().path()) + size;
  }
  if (e.has_checkpoint_failed()) {
    const v1::CheckpointFailed& f = e.checkpoint_failed();
    return "warning: checkpoint after step " + std::to_string(f.step()) + " not written (" +
           TerminalSafe(f.reason()) + "); training goes on, a restart resumes " +
           (f.resumes_after_step() > 0 ? "after step " + std::to_string(f.resumes_after_step())
                                       : std::string("from the start"));
  }
  if (e.has_log()) {
    const char* level = e.log().level() == v1::LogMessage::LEVEL_ERROR     ? "error"
                        : e.log().level() == v1::LogMessage::LEVEL_WARNING ? "warning"
                                                                           : "info";
    return std::string(level) + ": " + TerminalSafe(e.log().text());
  }
  return "event " + std::to_string(e.sequence());
}

std::string LogLine(const v1::JobEvent& e) {
  char when[32] = "";
  const std::time_t seconds = e.time().seconds();
  std::tm utc{};
  if (gmtime_r(&seconds, &utc) != nullptr) std::strftime(when, sizeof when, "%FT%TZ", &utc);
  std::string source = "controller";
  if (e.attempt() > 0) {
    source = "attempt " + std::to_string(e.attempt()) +
             (e.rank_sequence() > 0 ? " rank " + std::to_string(e.rank()) : "");
  }
  return std::string(when) + "  " + source + "  " + EventLine(e);
}

std::string ErrorText(const Status& status) {
  const std::vector<FieldViolation>& violations = status.field_violations();
  if (violations.size() < 2) return "error: " + TerminalSafeLines(status.message()) + "\n";
  std::string text = "error: " + std::to_string(violations.size()) + " problems:\n";
  for (const FieldViolation& v : violations) text += "  " + TerminalSafe(v.description) + "\n";
  return text;
}

}  // namespace accumulus::client
