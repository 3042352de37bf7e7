#include "worker/trainer/proto_event_sink.h"

#include <google/protobuf/util/delimited_message_util.h>

#include "common/clock.h"
#include "common/mutex.h"

namespace accumulus::trainer {
namespace {

v1::JobEvent TimedEvent() {
  v1::JobEvent event;
  *event.mutable_time() = Now();
  return event;
}

}  // namespace

ProtoEventSink::ProtoEventSink(int fd, v1::RuntimeInfo runtime, std::chrono::milliseconds max_delay)
    : runtime_(std::move(runtime)),
      max_delay_(max_delay),
      out_(fd),
      last_write_(std::chrono::steady_clock::now()) {
  if (max_delay_.count() > 0) flusher_ = std::thread([this] { FlushWhenDue(); });
}

ProtoEventSink::~ProtoEventSink() {
  {
    MutexLock lock(&mutex_);
    stopping_ = true;
    WriteHeldLocked();
  }
  changed_.NotifyAll();
  if (flusher_.joinable()) flusher_.join();
}

void ProtoEventSink::OnRun(const engine::RunReport& report) {
  v1::JobEvent event = TimedEvent();
  v1::RuntimeInfo* info = event.mutable_runtime();
  *info = runtime_;
  info->set_device(report.device);
  info->set_parameters(report.parameters);
  info->set_samples_per_epoch(report.samples_per_epoch);
  info->set_steps_per_epoch(report.steps_per_epoch);
  info->set_steps_total(report.steps_total);
  info->set_lr_first(report.lr_first);
  info->set_lr_last(report.lr_last);
  info->set_resumed_from_step(report.resumed_from_step);
  for (int64_t k : report.accumulation_ramp) info->add_accumulation_ramp(k);
  info->mutable_batch()->set_micro_batch(report.micro_batch);
  info->mutable_batch()->set_accumulation_steps(report.accumulation_steps);
  if (report.threads.intra_op > 0) {
    info->set_intra_op_threads(report.threads.intra_op);
    info->set_blas_threads(report.threads.blas);
    info->set_threads_source(report.thread_trials.empty() ? v1::THREADS_SOURCE_CHECKPOINT
                                                          : v1::THREADS_SOURCE_MEASURED);
  } else {
    info->set_threads_source(v1::THREADS_SOURCE_GIVEN);
  }
  for (const auto& t : report.thread_trials) {
    v1::ThreadTrial* trial = info->add_thread_trials();
    trial->set_intra_op_threads(t.split.intra_op);
    trial->set_blas_threads(t.split.blas);
    trial->set_samples_per_second(t.samples_per_second);
  }
  for (const auto& p : report.probe) {
    v1::MicroBatchProbe* probe = info->add_probe();
    probe->set_micro_batch(p.micro_batch);
    probe->set_peak_bytes(p.peak_bytes);
    probe->set_fits(p.fits);
  }
  Emit(std::move(event), /*hold=*/false);
}

void ProtoEventSink::OnStep(const engine::StepReport& r) {
  v1::JobEvent event = TimedEvent();
  v1::StepMetrics* s = event.mutable_step();
  s->set_step(r.step);
  s->set_epoch(r.epoch);
  s->set_microbatches(r.microbatches);
  s->set_samples(r.samples);
  s->set_effective_batch(r.effective_batch);
  s->set_loss_items(r.loss_items);
  s->set_loss(r.loss);
  s->set_lr(r.lr);
  s->set_grad_norm(r.grad_norm);
  s->set_clipped(r.clipped);
  s->set_samples_per_second(r.samples_per_second);
  s->set_step_seconds(r.step_seconds);
  s->set_tensor_bytes(r.tensor_bytes);
  s->set_tensor_peak_bytes(r.tensor_peak_bytes);
  s->set_process_rss_bytes(r.process_rss_bytes);
  s->set_allocator_reserved_bytes(r.allocator_reserved_bytes);
  s->set_allocator_retries(r.allocator_retries);
  s->set_rank(runtime_.rank());
  s->set_steps_total(r.steps_total);
  s->set_allreduce_calls(r.allreduce_calls);
  s->set_allreduce_bytes(r.allreduce_bytes);
  s->set_comm_seconds(r.comm_seconds);
  s->set_loss_scale(r.loss_scale);
  s->set_skipped(r.skipped);
  s->set_skipped_steps(r.skipped_steps);
  s->set_forward_seconds(r.forward_seconds);
  s->set_backward_seconds(r.backward_seconds);
  s->set_optimizer_seconds(r.optimizer_seconds);
  s->set_tokens(r.tokens);
  if (r.noise.windows > 0) {
    v1::NoiseScale* noise = s->mutable_noise();
    noise->set_noise_scale(r.noise.noise_scale);
    noise->set_gradient_sq_norm(r.noise.gradient_sq_norm);
    noise->set_noise_trace(r.noise.noise_trace);
    if (r.noise.measured) {
      noise->set_small_batch(r.noise.sample.small_batch);
      noise->set_small_sq_norm(r.noise.sample.small_sq_norm);
      noise->set_big_batch(r.noise.sample.big_batch);
      noise->set_big_sq_norm(r.noise.sample.big_sq_norm);
      noise->set_window_gradient_sq_norm(r.noise.window.gradient_sq_norm);
      noise->set_window_noise_trace(r.noise.window.noise_trace);
    }
    noise->set_tokens(r.tokens > 0);
  }
  Emit(std::move(event), /*hold=*/true);
}

void ProtoEventSink::OnBatchChange(const engine::BatchChange& change) {
  v1::JobEvent event = TimedEvent();
  v1::BatchChange* batch = event.mutable_batch_change();
  batch->set_step(change.step);
  batch->set_accumulation_steps(change.accumulation_steps);
  batch->set_global_batch(change.global_batch);
  batch->set_previous_global_batch(change.previous_global_batch);
  batch->set_noise_scale(change.noise_scale);
  batch->set_lr(change.lr);
  batch->set_reason(change.reason);
  Emit(std::move(event), /*hold=*/false);
}

void ProtoEventSink::OnCheckpoint(const engine::CheckpointReport& report) {
  v1::JobEvent event = TimedEvent();
  v1::CheckpointWritten* checkpoint = event.mutable_checkpoint();
  checkpoint->set_step(report.step);
  checkpoint->set_path(report.path);
  checkpoint->set_bytes(report.bytes);
  checkpoint->set_seconds(report.seconds);
  Emit(std::move(event), /*hold=*/false);
}

void ProtoEventSink::OnCheckpointFailed(const engine::CheckpointFailure& failure) {
  v1::JobEvent event = TimedEvent();
  v1::CheckpointFailed* failed = event.mutable_checkpoint_failed();
  failed->set_step(failure.step);
  failed->set_reason(failure.reason);
  failed->set_resumes_after_step(failure.resumes_after_step);
  Emit(std::move(event), /*hold=*/false);
}

void ProtoEventSink::OnSplitChange(const engine::SplitChange& change) {
  v1::JobEvent event = TimedEvent();
  v1::SplitChange* split = event.mutable_split();
  split->set_rank(runtime_.rank());
  split->set_step(change.step);
  split->set_micro_batch(change.micro_batch);
  split->set_accumulation_steps(change.accumulation_steps);
  split->set_reason(change.reason);
  Emit(std::move(event), /*hold=*/false);
}

void ProtoEventSink::OnLog(engine::LogLevel level, const std::string& text) {
  v1::JobEvent event = TimedEvent();
  v1::LogMessage* log = event.mutable_log();
  log->set_level(level == engine::LogLevel::kError     ? v1::LogMessage::LEVEL_ERROR
                 : level == engine::LogLevel::kWarning ? v1::LogMessage::LEVEL_WARNING
                                                       : v1::LogMessage::LEVEL_INFO);
  log->set_text(text);
  Emit(std::move(event), /*hold=*/false);
}

void ProtoEventSink::Exit(const v1::TrainerExit& exit) {
  v1::TrainerMessage message;
  *message.mutable_exit() = exit;
  MutexLock lock(&mutex_);
  WriteHeldLocked();
  WriteLocked(message);
}

void ProtoEventSink::Emit(v1::JobEvent event, bool hold) {
  bool first_held = false;
  {
    MutexLock lock(&mutex_);
    // Numbered in the order written: the controller knows a resent event
    // by its rank and number.
    event.set_rank(runtime_.rank());
    event.set_rank_sequence(++last_sequence_);
    v1::EventBatch* batch = held_.mutable_events();
    *batch->add_events() = std::move(event);
    // Held only when the last message went out less than max_delay ago:
    // at most one message per interval, and a slow job's steps (or the
    // first of a burst) go at once.
    if (!hold || (batch->events_size() == 1 && std::chrono::steady_clock::now() >= DueLocked())) {
      WriteHeldLocked();
      return;
    }
    first_held = batch->events_size() == 1;
  }
  if (first_held) changed_.NotifyAll();
}

std::chrono::steady_clock::time_point ProtoEventSink::DueLocked() const {
  // Nothing is written while events are held (every write takes them
  // along), so the interval of the held batch starts at the last write.
  return last_write_ + max_delay_;
}

void ProtoEventSink::WriteHeldLocked() {
  if (!held_.has_events()) return;
  WriteLocked(held_);
  held_.Clear();
}

void ProtoEventSink::WriteLocked(const v1::TrainerMessage& message) {
  // Flushed per message: the daemon must see it now, not when a buffer fills.
  google::protobuf::util::SerializeDelimitedToZeroCopyStream(message, &out_);
  out_.Flush();
  last_write_ = std::chrono::steady_clock::now();
}

void ProtoEventSink::FlushWhenDue() {
  MutexLock lock(&mutex_);
  // Each wake-up looks again: a log or the exit may have written the batch,
  // and a new batch has its own deadline.
  while (!stopping_) {
    if (!held_.has_events()) {
      changed_.Wait(&mutex_);
    } else if (std::chrono::steady_clock::now() >= DueLocked()) {
      WriteHeldLocked();
    } else {
      changed_.WaitUntil(&mutex_, DueLocked());
    }
  }
}

}  // namespace accumulus::trainer
