// SIGTERM stops the daemons gracefully only if it reaches their main thread,
// which waits for it: every other thread must block it. A thread that does
// not (one started before the mask was set) can be handed the signal by the
// kernel, and its default action kills the process mid-write — seen once in
// a sanitizer build, where a controller stopped right after it was ready
// died of SIGTERM. Read from /proc, this checks every thread, every time.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/read_file.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

// The threads of `pid` but its main thread whose blocked-signal mask lacks
// `signal`, by tid. (The main thread waits for it in sigwait, during which
// the kernel shows the waited-for signals unblocked.)
std::vector<std::string> ThreadsNotBlocking(pid_t pid, int signal) {
  std::vector<std::string> offenders;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(tasks.c_str());
  EXPECT_NE(dir, nullptr) << tasks;
  if (dir == nullptr) return offenders;
  while (const dirent* entry = readdir(dir)) {
    const std::string tid = entry->d_name;
    if (tid == "." || tid == ".." || tid == std::to_string(pid)) continue;
    std::ifstream status(tasks + "/" + tid + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("SigBlk:", 0) != 0) continue;
      const uint64_t blocked = std::stoull(line.substr(7), nullptr, 16);
      if ((blocked & (uint64_t{1} << (signal - 1))) == 0) offenders.push_back(tid);
    }
  }
  closedir(dir);
  return offenders;
}

TEST(DaemonSignals, EveryThreadOfTheControllerAndTheWorkerBlocksTheStopSignals) {
  TestCluster cluster;
  const std::string worker = cluster.StartWorker();
  // Registered: the worker's link and supervisor threads are running.
  ASSERT_TRUE(cluster.WaitForWorkers({worker},
                                     std::chrono::steady_clock::now() + std::chrono::seconds(30)));
  for (const int signal : {SIGTERM, SIGINT, SIGHUP}) {
    EXPECT_EQ(ThreadsNotBlocking(cluster.controller_pid(), signal), std::vector<std::string>{})
        << "controller threads that could be handed signal " << signal;
    EXPECT_EQ(ThreadsNotBlocking(cluster.worker_pid(worker), signal), std::vector<std::string>{})
        << "worker threads that could be handed signal " << signal;
  }
}

// A closed terminal (SIGHUP: an ssh session running `accumulus up` dropped)
// stops the daemons as SIGTERM does: gracefully, with exit code 0 — a
// running job's trainer stops at a window boundary and the job stays
// resumable, instead of every process dying where it stands.
TEST(DaemonSignals, SighupStopsTheWorkerAndTheControllerGracefully) {
  TestCluster cluster;
  const std::string worker = cluster.StartWorker();
  ASSERT_TRUE(cluster.WaitForWorkers({worker},
                                     std::chrono::steady_clock::now() + std::chrono::seconds(30)));
  const Subprocess::ExitInfo worker_exit = cluster.StopWorker(worker, SIGHUP);
  EXPECT_TRUE(worker_exit.success) << worker_exit.description;
  const std::string log = ReadFile(cluster.WorkerLog(worker));
  EXPECT_NE(log.find("signal " + std::to_string(SIGHUP) + ": stopping trainers"), std::string::npos)
      << log;
  const Subprocess::ExitInfo controller_exit = cluster.RestartController({}, SIGHUP);
  EXPECT_TRUE(controller_exit.success) << controller_exit.description;
}

}  // namespace
}  // namespace accumulus::testing
