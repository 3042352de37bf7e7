// The benchmark binary's main: the trainer's thread setup, then every
// registered benchmark.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <thread>

#include "worker/engine/thread_setup.h"

int main(int argc, char** argv) {
  // The trainer's own configuration: LibTorch threads on every core (what a
  // worker gives a one-slot trainer; LibTorch's own default counts physical
  // cores only), one BLAS thread (PLATFORM.md: oversubscription halves
  // throughput).
  const auto threads = accumulus::engine::ConfigureThreads(
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency())), 1);
  benchmark::AddCustomContext("intra_op_threads", std::to_string(threads.intra_op_threads));
  benchmark::AddCustomContext("blas_threads", std::to_string(threads.blas_threads));
  benchmark::AddCustomContext("blas", threads.blas);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
