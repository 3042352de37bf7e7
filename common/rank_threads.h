// The CPU threads a trainer rank gets: the spec's, else the worker's flags,
// else none fixed, and the rank measures how to split its cores between
// LibTorch's intra-op pool and the BLAS (worker/engine/thread_split.h).
#pragma once

#include <string>

#include "accumulus/v1/job.pb.h"
#include "common/status.h"

namespace accumulus {

struct RankThreads {
  // Both 0: the rank measures the split of `cores`.
  int intra_op = 0;
  int blas = 0;
  int cores = 1;
  bool rank_measures() const { return intra_op == 0 && blas == 0; }
};

// Fields the spec leaves at 0 take the worker's defaults; where only one of
// the two ends up set, the other gets the cores it leaves (cores / given, at
// least 1): all cores to LibTorch means one BLAS thread, and the reverse.
RankThreads ResolveRankThreads(const v1::ThreadSpec& spec, int worker_intra_op, int worker_blas,
                               int cores);

// A spec may not ask a rank for more threads of either pool than the cores
// of its device slot (`slot`, e.g. "cpu:0 on worker w1"): more only
// oversubscribes them. INVALID_ARGUMENT naming the field, its value and the
// cores.
Status CheckThreadsFitSlot(const v1::ThreadSpec& spec, int cores, const std::string& slot);

}  // namespace accumulus
