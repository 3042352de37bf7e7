// Every Prometheus family the controller exports, built in one place.
#pragma once

#include "common/metrics/registry.h"

namespace accumulus::server {

struct ControllerMetrics {
  explicit ControllerMetrics(metrics::Registry* registry);

  // Labels: state (queued, starting, running, ..., cancelled).
  metrics::Family<metrics::Gauge>* jobs;
  metrics::Counter* jobs_submitted;
  metrics::Counter* jobs_rejected;
  metrics::Gauge* workers_connected;
  metrics::Gauge* device_slots_free;
  metrics::Counter* events_total;
  metrics::Counter* job_restarts;
  metrics::Counter* store_errors;
  metrics::Gauge* watchers;
  // Client API calls refused (label code: unauthenticated, permission_denied).
  metrics::Family<metrics::Counter>* requests_refused;
  // Attempts that ended without succeeding (label failure_class: bad_spec,
  // out_of_memory, worker_lost, ...; job.proto's FailureClass).
  metrics::Family<metrics::Counter>* attempts_failed;
  // Per running job (label job_id: Prometheus reserves `job` for the scrape
  // target); removed when the job ends.
  metrics::Family<metrics::Counter>* job_steps;
  metrics::Family<metrics::Gauge>* job_loss;
  metrics::Family<metrics::Gauge>* job_samples_per_second;
  metrics::Family<metrics::Gauge>* job_effective_batch;
  // Memory per job and rank (labels job_id, rank).
  metrics::Family<metrics::Gauge>* job_tensor_bytes;
  metrics::Family<metrics::Gauge>* job_tensor_peak_bytes;
  metrics::Family<metrics::Gauge>* job_process_rss_bytes;
  metrics::Family<metrics::Gauge>* job_allocator_reserved_bytes;
  metrics::Family<metrics::Gauge>* job_allocator_retries;
  metrics::Family<metrics::Histogram>* job_step_seconds;
};

}  // namespace accumulus::server
