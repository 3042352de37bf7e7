// The benchmark binary's main: the trainer's thread setup, then every
// registered benchmark.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <thread>

#include "worker/engine/thread_setup.h"

int main(int argc, char** argv) {
  // As a trainer that owns every core starts (one inter-op thread); each
  // benchmark then applies the split a trainer measures for its model and
  // micro-batch (bench_models.h).
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const auto threads = accumulus::engine::ConfigureThreads(cores, 1);
  benchmark::AddCustomContext("cores", std::to_string(cores));
  benchmark::AddCustomContext("blas", threads.blas);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
