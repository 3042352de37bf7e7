// Every Prometheus family the controller exports, built in one place
// (docs/operations.md, "Metrics", lists them). Base units, `_total` for
// counters. Per-job series carry job_id (Prometheus reserves `job` for the
// scrape target); per-rank ones job_id, rank and worker_id.
#pragma once

#include "common/metrics/registry.h"

namespace accumulus::server {

struct ControllerMetrics {
  explicit ControllerMetrics(metrics::Registry* registry);

  // The controller.
  metrics::Gauge* build_info;
  // Time the process did not run (AwakeClock).
  metrics::Counter* stalled_seconds;
  // Labels: state (every JobState, zero included).
  metrics::Family<metrics::Gauge>* jobs;
  metrics::Counter* jobs_submitted;
  metrics::Counter* jobs_rejected;
  // Jobs that reached a final state (label state: succeeded, failed,
  // cancelled).
  metrics::Family<metrics::Counter>* jobs_finished;
  metrics::Counter* job_restarts;
  // Attempts that ended without succeeding (label failure_class: every
  // FailureClass, zero included).
  metrics::Family<metrics::Counter>* attempts_failed;
  // From queued to placed, each attempt.
  metrics::Histogram* queue_wait_seconds;
  metrics::Gauge* workers_connected;
  // Worker links that ended while ranks ran there.
  metrics::Counter* workers_lost;
  metrics::Gauge* device_slots;
  metrics::Gauge* device_slots_busy;
  metrics::Gauge* watchers;
  metrics::Counter* events_total;
  metrics::Counter* store_errors;
  metrics::Gauge* store_writable;
  // Client API calls refused (label code: unauthenticated, permission_denied).
  metrics::Family<metrics::Counter>* requests_refused;
  // Every gRPC call the controller finished (labels method, code), and the
  // latency of the unary ones (label method).
  metrics::Family<metrics::Counter>* grpc_requests;
  metrics::Family<metrics::Histogram>* grpc_request_seconds;

  // Per job (label job_id).
  metrics::Family<metrics::Gauge>* job_running;
  metrics::Family<metrics::Gauge>* job_attempt;
  metrics::Family<metrics::Gauge>* job_last_progress;
  metrics::Family<metrics::Counter>* job_steps;
  metrics::Family<metrics::Counter>* job_samples;
  metrics::Family<metrics::Counter>* job_tokens;
  metrics::Family<metrics::Counter>* job_skipped_steps;
  metrics::Family<metrics::Counter>* job_clipped_steps;
  metrics::Family<metrics::Counter>* job_checkpoints;
  metrics::Family<metrics::Counter>* job_checkpoint_failures;
  metrics::Family<metrics::Gauge>* job_loss;
  metrics::Family<metrics::Gauge>* job_samples_per_second;
  metrics::Family<metrics::Gauge>* job_effective_batch;
  metrics::Family<metrics::Gauge>* job_micro_batch;
  metrics::Family<metrics::Gauge>* job_accumulation_steps;
  metrics::Family<metrics::Gauge>* job_devices;
  metrics::Family<metrics::Gauge>* job_learning_rate;
  metrics::Family<metrics::Gauge>* job_grad_norm;
  metrics::Family<metrics::Gauge>* job_loss_scale;
  metrics::Family<metrics::Gauge>* job_noise_scale;
  metrics::Family<metrics::Counter>* job_batch_changes;
  metrics::Family<metrics::Histogram>* job_step_seconds;

  // Per rank (labels job_id, rank, worker_id).
  metrics::Family<metrics::Histogram>* rank_phase_seconds;  // and phase
  metrics::Family<metrics::Counter>* rank_allreduce_bytes;
  metrics::Family<metrics::Counter>* rank_allreduce_seconds;
  metrics::Family<metrics::Gauge>* rank_tensor_bytes;
  metrics::Family<metrics::Gauge>* rank_tensor_peak_bytes;
  metrics::Family<metrics::Gauge>* rank_memory_budget_bytes;
  metrics::Family<metrics::Gauge>* rank_process_rss_bytes;
  metrics::Family<metrics::Gauge>* rank_allocator_reserved_bytes;
  metrics::Family<metrics::Counter>* rank_allocator_retries;
  metrics::Family<metrics::Counter>* rank_oom_retries;
};

}  // namespace accumulus::server
