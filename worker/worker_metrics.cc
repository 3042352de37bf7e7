#include "worker/worker_metrics.h"

#include "common/device_name.h"
#include "common/enum_names.h"

namespace accumulus::worker {

WorkerMetrics::WorkerMetrics(metrics::Registry* r)
    : build_info(r->AddGauge("accumulus_worker_build_info",
                             "The worker's version (the value is always 1).", {"version"})
                     ->WithLabels({ACCUMULUS_VERSION})),
      device_slots(r->AddGauge("accumulus_worker_device_slots",
                               "Device slots this worker offers, by kind.", {"kind"})),
      device_memory_bytes(r->AddGauge("accumulus_worker_device_memory_bytes",
                                      "Memory each device slot offers a rank.", {"device"})),
      trainers_running(r->AddGauge("accumulus_worker_trainers_running",
                                   "Trainer processes (one per rank) running.")
                           ->WithLabels({})),
      trainers_started(
          r->AddCounter("accumulus_worker_trainers_started_total", "Trainer processes started.")
              ->WithLabels({})),
      messages_buffered(r->AddGauge("accumulus_worker_messages_buffered",
                                    "Messages for the controller not yet acknowledged.")
                            ->WithLabels({})),
      messages_dropped(r->AddCounter("accumulus_worker_messages_dropped_total",
                                     "Event batches dropped while the controller did not "
                                     "acknowledge them — unreachable, or unable to record them "
                                     "(beyond --max-buffered-messages).")
                           ->WithLabels({})),
      controller_connected(r->AddGauge("accumulus_worker_controller_connected",
                                       "1 while registered with the controller, else 0.")
                               ->WithLabels({})),
      controller_reconnects(r->AddCounter("accumulus_worker_controller_reconnects_total",
                                          "Registrations with the controller after the first.")
                                ->WithLabels({})),
      stalled_seconds(r->AddCounter("accumulus_worker_stalled_seconds_total",
                                    "Time the worker daemon did not run, in stalls of over 250 "
                                    "ms (stopped, frozen or starved of CPU); one longer than its "
                                    "trainers' lease stops them.")
                          ->WithLabels({})) {
  build_info->Set(1);
  // Both kinds from the start: a CPU node says it has 0 GPUs.
  for (const std::string& kind : EnumValueNameList(EnumTypeOf<v1::DeviceKind>())) {
    device_slots->WithLabels({kind});
  }
}

void WorkerMetrics::Inventory(const std::vector<v1::Device>& devices) {
  for (const v1::Device& device : devices) {
    device_slots->WithLabels({NameOf(device.kind())})->Increment();
    device_memory_bytes->WithLabels({DeviceName(device)})
        ->Set(static_cast<double>(device.memory_bytes()));
  }
}

}  // namespace accumulus::worker
