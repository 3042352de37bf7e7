#include "worker/engine/thread_setup.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

namespace accumulus::engine {
namespace {

// The BLAS's C API, looked up at run time: PyPI's LibTorch has MKL inside
// libtorch_cpu (its threads are OpenMP's); other builds link whatever
// libblas.so.3 the system's alternatives point to, OpenBLAS or not.
template <typename Fn>
Fn LookUp(const char* symbol) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, symbol));
}

// MKL: the count applies to MKL calls made from this thread (the training
// loop's), which is where LibTorch's GEMMs run; at::set_num_threads has
// just set MKL's global count to the intra-op count.
bool SetMklThreads(int blas_threads, ThreadReport* report) {
  // libtorch_cpu exports MKL's Fortran-style entry under the C name too
  // (one address for mkl_set_num_threads_local and ..._local_): it takes
  // the count by pointer.
  using SetLocal = int (*)(const int*);
  using GetMax = int (*)();
  using GetVersion = void (*)(char*, int);
  auto set_local = LookUp<SetLocal>("mkl_set_num_threads_local");
  auto get_max = LookUp<GetMax>("mkl_get_max_threads");
  auto get_version = LookUp<GetVersion>("MKL_Get_Version_String");
  if (!set_local || !get_max) return false;
  if (blas_threads > 0) set_local(&blas_threads);
  report->blas_threads = get_max();
  char version[256] = "Intel MKL";
  if (get_version) get_version(version, sizeof(version));
  report->blas = version;
  return true;
}

bool SetOpenBlasThreads(int blas_threads, ThreadReport* report) {
  using SetThreads = void (*)(int);
  using GetThreads = int (*)();
  using GetConfig = char* (*)();
  auto set_threads = LookUp<SetThreads>("openblas_set_num_threads");
  auto get_threads = LookUp<GetThreads>("openblas_get_num_threads");
  auto get_config = LookUp<GetConfig>("openblas_get_config");
  if (!set_threads || !get_threads) return false;
  if (blas_threads > 0) set_threads(blas_threads);
  report->blas_threads = get_threads();
  report->blas = get_config ? get_config() : "OpenBLAS";
  return true;
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

bool BlasSharesIntraOpPool() { return LookUp<void*>("mkl_get_max_threads") != nullptr; }

ThreadReport SetThreadCounts(int intra_op_threads, int blas_threads) {
  if (intra_op_threads > 0) at::set_num_threads(intra_op_threads);

  ThreadReport report;
  report.intra_op_threads = at::get_num_threads();
  report.inter_op_threads = at::get_num_interop_threads();
  if (!SetMklThreads(blas_threads, &report) && !SetOpenBlasThreads(blas_threads, &report)) {
    report.blas =
        "neither MKL nor OpenBLAS (libblas.so.3 may be the slow reference BLAS: install "
        "libopenblas0-pthread)";
  }
  return report;
}

}  // namespace accumulus::engine
