// The trainer owns its CPU thread configuration: LibTorch intra-op threads,
// inter-op threads and BLAS threads (MKL in PyPI's LibTorch, OpenBLAS in
// distributions' builds). Oversubscription (OpenMP threads plus a BLAS's own
// threads on the same cores) halves throughput on small machines: the worker
// gives a rank's cores to one of the two pools, and which one is measured
// per job (thread_split.h) unless the spec says.
#pragma once

#include <string>

namespace accumulus::engine {

struct ThreadReport {
  int intra_op_threads = 0;
  int inter_op_threads = 0;
  // -1 when the BLAS offers no way to set or read its thread count.
  int blas_threads = -1;
  // e.g. "Intel(R) oneAPI Math Kernel Library Version 2024.2-Product ...",
  // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64", or a
  // note that the BLAS could not be identified.
  std::string blas;
};

// Applies the thread counts (values <= 0 keep LibTorch's and the BLAS's
// defaults) and reports what is in force. Call once, before any tensor work.
ThreadReport ConfigureThreads(int intra_op_threads, int blas_threads);

// Changes the intra-op and BLAS thread counts of a running process (both
// pools resize between ops), as ConfigureThreads does.
ThreadReport SetThreadCounts(int intra_op_threads, int blas_threads);

// Whether the BLAS runs on LibTorch's intra-op OpenMP threads (MKL) rather
// than threads of its own (OpenBLAS), so that giving every core to both
// cannot oversubscribe them.
bool BlasSharesIntraOpPool();

}  // namespace accumulus::engine
