// The window schedule's closed-form step counts against the windows it
// hands out, for small configurations drawn from the bytes (differential:
// the walk is the truth the trainer trains on).
#include <cstddef>
#include <cstdint>

#include "common/window_schedule.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 9) return 0;
  accumulus::WindowScheduleConfig c;
  c.policy = static_cast<accumulus::PartialWindow>(data[0] % 3);
  c.samples_per_epoch = data[1];  // 0 included: an empty stream
  c.micro_batch = 1 + data[2] % 16;
  c.devices = 1 + data[3] % 4;
  c.accumulation_steps = 1 + data[4] % 8;
  c.epochs = data[5] % 6;
  c.max_steps = data[6] % 2 == 0 && c.epochs > 0 ? 0 : 1 + data[6] % 200;
  if (data[7] % 3 == 0) {
    c.nominal_batch = 1 + data[8] % 128;
    c.warmup_steps = data[7] % 20;
  }
  accumulus::WindowSchedule counted(c);
  accumulus::WindowSchedule walked(c);
  int64_t total = 0, first_epoch = 0;
  accumulus::Window w;
  while (walked.Next(&w)) {
    ++total;
    if (w.epoch == 0) ++first_epoch;
    FUZZ_CHECK(w.size() > 0 && w.size() <= w.global_batch);
    FUZZ_CHECK(total <= 100000);  // every configuration here ends
  }
  FUZZ_CHECK(counted.steps_total() == total);
  FUZZ_CHECK(counted.steps_in_first_epoch() == first_epoch);
  return 0;
}
