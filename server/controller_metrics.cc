#include "server/controller_metrics.h"

#include "accumulus/v1/job.pb.h"
#include "common/enum_names.h"

namespace accumulus::server {
namespace {

const std::vector<std::string> kJob{"job_id"};
const std::vector<std::string> kRank{"job_id", "rank", "worker_id"};

// Step times: a millisecond (an mlp's window) to ten minutes (a large
// model's window with deep accumulation).
const std::vector<double> kStepBounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                      1,     2.5,    5,     10,   30,    60,   120, 600};

// Every value of a label known up front is exported from the start, as 0:
// a query (or an alert) over it then has a series before the first event,
// and rate() sees the first increment.
template <typename Metric>
void Zero(metrics::Family<Metric>* family, const std::vector<std::string>& values) {
  for (const std::string& value : values) family->WithLabels({value});
}

}  // namespace

ControllerMetrics::ControllerMetrics(metrics::Registry* r)
    : build_info(r->AddGauge("accumulus_build_info",
                             "The controller's version (the value is always 1).", {"version"})
                     ->WithLabels({ACCUMULUS_VERSION})),
      stalled_seconds(
          r->AddCounter("accumulus_controller_stalled_seconds_total",
                        "Time the controller process did not run, in stalls of over 250 ms "
                        "(stopped, frozen or starved of CPU); a worker's silence does not "
                        "count it.")
              ->WithLabels({})),
      jobs(r->AddGauge("accumulus_jobs", "Jobs known to the controller, by state.", {"state"})),
      jobs_submitted(
          r->AddCounter("accumulus_jobs_submitted_total", "Jobs accepted.")->WithLabels({})),
      jobs_rejected(
          r->AddCounter("accumulus_jobs_rejected_total", "Job submissions rejected as invalid.")
              ->WithLabels({})),
      jobs_finished(r->AddCounter("accumulus_jobs_finished_total",
                                  "Jobs that reached a final state, by that state.", {"state"})),
      job_restarts(r->AddCounter("accumulus_job_restarts_total",
                                 "Failed attempts restarted (from the newest checkpoint).")
                       ->WithLabels({})),
      attempts_failed(r->AddCounter("accumulus_attempts_failed_total",
                                    "Attempts that ended without succeeding, by failure class "
                                    "(a failed, cancelled or restarted job's attempt).",
                                    {"failure_class"})),
      queue_wait_seconds(
          r->AddHistogram("accumulus_job_queue_wait_seconds",
                          "Time an attempt waited in the queue before it was placed.",
                          {0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 14400})
              ->WithLabels({})),
      workers_connected(
          r->AddGauge("accumulus_workers_connected", "Workers with a live link.")->WithLabels({})),
      workers_lost(r->AddCounter("accumulus_workers_lost_total",
                                 "Worker links that ended while ranks of a job ran there (the "
                                 "worker stopped, crashed or went silent).")
                       ->WithLabels({})),
      device_slots(r->AddGauge("accumulus_device_slots", "Device slots of the connected workers.")
                       ->WithLabels({})),
      device_slots_busy(r->AddGauge("accumulus_device_slots_busy", "Device slots held by a job.")
                            ->WithLabels({})),
      watchers(r->AddGauge("accumulus_watchers", "Open WatchJob streams.")->WithLabels({})),
      events_total(r->AddCounter("accumulus_job_events_total", "Job events recorded and relayed.")
                       ->WithLabels({})),
      store_errors(r->AddCounter("accumulus_store_errors_total",
                                 "Commits to the state database that failed (each retry too).")
                       ->WithLabels({})),
      store_writable(r->AddGauge("accumulus_store_writable",
                                 "1 while the state database takes writes; 0 while its commits "
                                 "fail and are retried (meanwhile no worker message is "
                                 "acknowledged, no event shown, and submit, cancel and resume "
                                 "are refused).")
                         ->WithLabels({})),
      requests_refused(r->AddCounter("accumulus_requests_refused_total",
                                     "Client API calls refused: no or an unknown token "
                                     "(unauthenticated), or a role or job not the caller's "
                                     "(permission_denied).",
                                     {"code"})),
      grpc_requests(r->AddCounter("accumulus_grpc_requests_total",
                                  "gRPC calls finished, by method and status code.",
                                  {"method", "code"})),
      grpc_request_seconds(r->AddHistogram(
          "accumulus_grpc_request_duration_seconds",
          "Latency of unary gRPC calls, from the call's start to its status.",
          {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
          {"method"})),
      job_running(r->AddGauge("accumulus_job_running",
                              "1 while the job's trainers train, else 0 (kept for the "
                              "finished-job retention).",
                              kJob)),
      job_attempt(
          r->AddGauge("accumulus_job_attempt", "The job's current attempt (1-based).", kJob)),
      job_last_progress(r->AddGauge(
          "accumulus_job_last_progress_timestamp_seconds",
          "When the job last made progress (started training, or finished a step); Unix time.",
          kJob)),
      job_steps(r->AddCounter("accumulus_job_steps_total", "Optimizer steps taken.", kJob)),
      job_samples(
          r->AddCounter("accumulus_job_samples_total", "Samples trained on, all ranks.", kJob)),
      job_tokens(r->AddCounter("accumulus_job_tokens_total",
                               "Target tokens trained on, all ranks (token data sets).", kJob)),
      job_skipped_steps(r->AddCounter("accumulus_job_skipped_steps_total",
                                      "Steps skipped on an inf/NaN gradient (loss scaling).",
                                      kJob)),
      job_clipped_steps(r->AddCounter("accumulus_job_clipped_steps_total",
                                      "Steps whose gradient clipping scaled down.", kJob)),
      job_checkpoints(
          r->AddCounter("accumulus_job_checkpoints_total", "Checkpoints written.", kJob)),
      job_checkpoint_failures(r->AddCounter(
          "accumulus_job_checkpoint_failures_total",
          "Checkpoints that could not be written (the job trained on without them).", kJob)),
      job_loss(r->AddGauge("accumulus_job_loss", "Mean loss of the latest window.", kJob)),
      job_samples_per_second(r->AddGauge("accumulus_job_samples_per_second",
                                         "Throughput of the latest window.", kJob)),
      job_effective_batch(r->AddGauge("accumulus_job_effective_batch",
                                      "micro_batch x accumulation_steps x devices.", kJob)),
      job_micro_batch(r->AddGauge("accumulus_job_micro_batch",
                                  "Samples per micro-batch (the smallest a rank runs).", kJob)),
      job_accumulation_steps(r->AddGauge("accumulus_job_accumulation_steps",
                                         "Micro-batches per optimizer step and rank.", kJob)),
      job_devices(r->AddGauge("accumulus_job_devices", "Ranks of the job's attempt.", kJob)),
      job_learning_rate(
          r->AddGauge("accumulus_job_learning_rate", "Learning rate of the latest step.", kJob)),
      job_grad_norm(r->AddGauge("accumulus_job_grad_norm",
                                "L2 norm of the latest window's gradient, before clipping.", kJob)),
      job_loss_scale(r->AddGauge("accumulus_job_loss_scale",
                                 "Loss scale of the latest window (1 without loss scaling).",
                                 kJob)),
      job_noise_scale(r->AddGauge(
          "accumulus_job_noise_scale",
          "Smoothed gradient noise scale B_noise = tr(Sigma)/|G|^2, in the loss's items (samples "
          "or tokens): the global batch the critical batch size is near.",
          kJob)),
      job_batch_changes(r->AddCounter("accumulus_job_batch_changes_total",
                                      "Global batch changes made by adaptive accumulation.", kJob)),
      job_step_seconds(r->AddHistogram("accumulus_job_step_seconds",
                                       "Wall time of one optimizer step (window).", kStepBounds,
                                       kJob)),
      rank_phase_seconds(r->AddHistogram(
          "accumulus_job_phase_seconds",
          "A rank's time per window in each phase: forward, backward, allreduce, optimizer.",
          kStepBounds, {"job_id", "rank", "worker_id", "phase"})),
      rank_allreduce_bytes(r->AddCounter("accumulus_job_allreduce_bytes_total",
                                         "Gradient bytes a rank all-reduced.", kRank)),
      rank_allreduce_seconds(r->AddCounter("accumulus_job_allreduce_seconds_total",
                                           "Time a rank spent in all-reduce.", kRank)),
      rank_tensor_bytes(r->AddGauge("accumulus_job_tensor_bytes",
                                    "Tensor bytes held at the end of the latest window.", kRank)),
      rank_tensor_peak_bytes(r->AddGauge("accumulus_job_tensor_peak_bytes",
                                         "Peak tensor bytes within the latest window.", kRank)),
      rank_memory_budget_bytes(r->AddGauge(
          "accumulus_job_memory_budget_bytes",
          "The rank's memory budget: the spec's memory_limit_bytes, or its device slot's memory.",
          kRank)),
      rank_process_rss_bytes(r->AddGauge("accumulus_job_process_rss_bytes",
                                         "Resident memory of the rank's trainer process.", kRank)),
      rank_allocator_reserved_bytes(
          r->AddGauge("accumulus_job_allocator_reserved_bytes",
                      "CUDA caching allocator: bytes reserved from the device (0 on CPU).", kRank)),
      rank_allocator_retries(r->AddCounter(
          "accumulus_job_allocator_retries_total",
          "CUDA caching allocator: allocations retried after freeing its cache (0 on CPU).",
          kRank)),
      rank_oom_retries(r->AddCounter("accumulus_job_oom_retries_total",
                                     "Windows run again with half the micro-batch after running "
                                     "out of memory.",
                                     kRank)) {
  Zero(jobs, EnumValueNameList(EnumTypeOf<v1::JobState>()));
  for (v1::JobState state :
       {v1::JOB_STATE_SUCCEEDED, v1::JOB_STATE_FAILED, v1::JOB_STATE_CANCELLED}) {
    jobs_finished->WithLabels({NameOf(state)});
  }
  Zero(attempts_failed, EnumValueNameList(EnumTypeOf<v1::FailureClass>()));
  Zero(requests_refused, {"unauthenticated", "permission_denied"});
  build_info->Set(1);
}

}  // namespace accumulus::server
