#include "worker/engine/thread_setup.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

namespace accumulus::engine {
namespace {

// OpenBLAS's C API, looked up at run time: LibTorch links whatever
// libblas.so.3 the system's alternatives point to, which may not be OpenBLAS.
template <typename Fn>
Fn LookUp(const char* symbol) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, symbol));
}

}  // namespace

ThreadReport ConfigureThreads(int intra_op_threads, int blas_threads) {
  // Inter-op parallelism runs independent ops concurrently; our loop has
  // none worth it, and its threads would compete with the intra-op pool.
  try {
    at::set_num_interop_threads(1);
  } catch (const std::exception&) {
    // Already fixed by earlier tensor work in this process (tests); keep it.
  }
  return SetThreadCounts(intra_op_threads, blas_threads);
}

ThreadReport SetThreadCounts(int intra_op_threads, int blas_threads) {
  if (intra_op_threads > 0) at::set_num_threads(intra_op_threads);

  ThreadReport report;
  report.intra_op_threads = at::get_num_threads();
  report.inter_op_threads = at::get_num_interop_threads();

  using SetThreads = void (*)(int);
  using GetThreads = int (*)();
  using GetConfig = char* (*)();
  auto set_threads = LookUp<SetThreads>("openblas_set_num_threads");
  auto get_threads = LookUp<GetThreads>("openblas_get_num_threads");
  auto get_config = LookUp<GetConfig>("openblas_get_config");
  if (set_threads && get_threads) {
    if (blas_threads > 0) set_threads(blas_threads);
    report.blas_threads = get_threads();
    report.blas = get_config ? get_config() : "OpenBLAS";
  } else {
    report.blas =
        "not OpenBLAS (libblas.so.3 may be the slow reference BLAS: install "
        "libopenblas0-pthread)";
  }
  return report;
}

}  // namespace accumulus::engine
