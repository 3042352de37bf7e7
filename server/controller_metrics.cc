#include "server/controller_metrics.h"

namespace accumulus::server {

ControllerMetrics::ControllerMetrics(metrics::Registry* r)
    : jobs(r->AddGauge("accumulus_jobs", "Jobs known to the controller, by state.", {"state"})),
      jobs_submitted(
          r->AddCounter("accumulus_jobs_submitted_total", "Jobs accepted.")->WithLabels({})),
      jobs_rejected(
          r->AddCounter("accumulus_jobs_rejected_total", "Job submissions rejected as invalid.")
              ->WithLabels({})),
      workers_connected(
          r->AddGauge("accumulus_workers_connected", "Workers with a live link.")->WithLabels({})),
      device_slots_free(
          r->AddGauge("accumulus_device_slots_free", "Device slots not held by a job.")
              ->WithLabels({})),
      events_total(
          r->AddCounter("accumulus_job_events_total", "Job events recorded.")->WithLabels({})),
      job_restarts(r->AddCounter("accumulus_job_restarts_total",
                                 "Failed attempts restarted (from the newest checkpoint).")
                       ->WithLabels({})),
      store_errors(r->AddCounter("accumulus_store_errors_total",
                                 "Writes to the state database that failed (not durable).")
                       ->WithLabels({})),
      watchers(r->AddGauge("accumulus_watchers", "Open WatchJob streams.")->WithLabels({})),
      requests_refused(r->AddCounter("accumulus_requests_refused_total",
                                     "Client API calls refused: no or an unknown token "
                                     "(unauthenticated), or a role or job not the caller's "
                                     "(permission_denied).",
                                     {"code"})),
      attempts_failed(r->AddCounter("accumulus_attempts_failed_total",
                                    "Attempts that ended without succeeding, by failure class "
                                    "(a failed, cancelled or restarted job's attempt).",
                                    {"failure_class"})),
      job_steps(r->AddCounter("accumulus_job_steps_total", "Optimizer steps taken.", {"job_id"})),
      job_loss(r->AddGauge("accumulus_job_loss", "Mean loss of the latest window.", {"job_id"})),
      job_samples_per_second(r->AddGauge("accumulus_job_samples_per_second",
                                         "Throughput of the latest window.", {"job_id"})),
      job_effective_batch(r->AddGauge("accumulus_job_effective_batch",
                                      "micro_batch x accumulation_steps x devices.", {"job_id"})),
      job_tensor_bytes(r->AddGauge("accumulus_job_tensor_bytes",
                                   "Tensor bytes held at the end of the latest window.",
                                   {"job_id", "rank"})),
      job_tensor_peak_bytes(r->AddGauge("accumulus_job_tensor_peak_bytes",
                                        "Peak tensor bytes within the latest window.",
                                        {"job_id", "rank"})),
      job_process_rss_bytes(r->AddGauge("accumulus_job_process_rss_bytes",
                                        "Resident memory of the rank's trainer process.",
                                        {"job_id", "rank"})),
      job_allocator_reserved_bytes(
          r->AddGauge("accumulus_job_allocator_reserved_bytes",
                      "CUDA caching allocator: bytes reserved from the device (0 on CPU).",
                      {"job_id", "rank"})),
      job_allocator_retries(r->AddGauge(
          "accumulus_job_allocator_retries",
          "CUDA caching allocator: allocations retried after freeing its cache, since the "
          "rank started (0 on CPU).",
          {"job_id", "rank"})),
      job_step_seconds(
          r->AddHistogram("accumulus_job_step_seconds", "Wall time of one optimizer step (window).",
                          {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60}, {"job_id"})) {}

}  // namespace accumulus::server
