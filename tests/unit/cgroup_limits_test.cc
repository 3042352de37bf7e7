// The memory limit and CPU quota of a worker's container, from cgroup files
// laid out in a temporary directory as the kernel lays them out: v2's
// unified tree, v1's controllers (with the container's own cgroup at the
// mount's root, as without a cgroup namespace), and no limit at all.
#include "common/cgroup_limits.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace accumulus {
namespace {

class CgroupLimitsTest : public ::testing::Test {
 protected:
  void Write(const std::string& relative, const std::string& text) {
    const std::filesystem::path path = temp_.path() + "/" + relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text << "\n";
  }
  int64_t Limit(const std::string& self_cgroup) {
    return CgroupMemoryLimitBytes(self_cgroup, temp_.path());
  }
  double Cores(const std::string& self_cgroup) {
    return CgroupCpuLimitCores(self_cgroup, temp_.path());
  }

  testing::TempDir temp_;
};

TEST_F(CgroupLimitsTest, VersionTwoTakesTheTightestOfTheCgroupAndItsAncestors) {
  Write("kubepods.slice/memory.max", "8589934592");
  Write("kubepods.slice/pod1/memory.max", "max");
  Write("kubepods.slice/pod1/worker/memory.max", "17179869184");
  EXPECT_EQ(Limit("0::/kubepods.slice/pod1/worker\n"), 8589934592);
  EXPECT_EQ(Limit("0::/kubepods.slice\n"), 8589934592);
}

TEST_F(CgroupLimitsTest, VersionTwoWithoutALimitHasNone) {
  Write("user.slice/memory.max", "max");
  EXPECT_EQ(Limit("0::/user.slice\n"), 0);
  EXPECT_EQ(Limit("0::/\n"), 0) << "the root has no memory.max";
}

TEST_F(CgroupLimitsTest, VersionOneReadsTheMemoryControllersLimit) {
  // A container without a cgroup namespace: /proc/self/cgroup names the
  // host's path, while the mount shows the container's cgroup at its root.
  Write("memory/memory.limit_in_bytes", "2147483648");
  EXPECT_EQ(Limit("12:pids:/docker/abc\n4:cpu,memory:/docker/abc\n1:name=systemd:/\n"), 2147483648);
}

TEST_F(CgroupLimitsTest, VersionOnesUnlimitedValueIsNoLimit) {
  Write("memory/memory.limit_in_bytes", "9223372036854771712");
  EXPECT_EQ(Limit("4:memory:/\n0::/\n"), 0);
}

TEST_F(CgroupLimitsTest, GarbageAndMissingFilesAreNoLimit) {
  Write("a/memory.max", "lots");
  Write("b/memory.max", "-5");
  EXPECT_EQ(Limit("0::/a\n"), 0);
  EXPECT_EQ(Limit("0::/b\n"), 0);
  EXPECT_EQ(Limit("0::/nowhere\n"), 0);
  EXPECT_EQ(Limit("not a cgroup line\n\n"), 0);
}

TEST_F(CgroupLimitsTest, VersionTwoCpuQuotaIsQuotaOverPeriodTightestUpTheTree) {
  Write("kubepods.slice/cpu.max", "max 100000");
  Write("kubepods.slice/pod1/cpu.max", "250000 100000");
  Write("kubepods.slice/pod1/worker/cpu.max", "400000 100000");
  EXPECT_DOUBLE_EQ(Cores("0::/kubepods.slice/pod1/worker\n"), 2.5);
  EXPECT_DOUBLE_EQ(Cores("0::/kubepods.slice\n"), 0) << "max: no quota";
}

TEST_F(CgroupLimitsTest, VersionOneCpuQuotaIsCfsQuotaOverPeriod) {
  Write("cpu/cpu.cfs_quota_us", "200000");
  Write("cpu/cpu.cfs_period_us", "100000");
  EXPECT_DOUBLE_EQ(Cores("3:cpu,cpuacct:/docker/abc\n"), 2);
  Write("cpu/cpu.cfs_quota_us", "-1");
  EXPECT_DOUBLE_EQ(Cores("3:cpu,cpuacct:/docker/abc\n"), 0) << "-1: no quota";
}

TEST(UsableCores, IsPositiveAndAtMostTheMachines) {
  const int cores = UsableCores();
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
}

TEST(UsableMemory, IsPositiveAndAtMostTheMachines) {
  const int64_t usable = UsableMemoryBytes();
  EXPECT_GT(usable, 0);
  EXPECT_LE(usable, static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) *
                        static_cast<int64_t>(sysconf(_SC_PAGESIZE)));
}

// The OOM killer's count: the worker's own cgroup's (v2), the container's
// at the mount's root (v1 without a cgroup namespace), and none known.
TEST_F(CgroupLimitsTest, VersionTwoCountsTheOomKillsOfTheProcesssOwnCgroup) {
  Write("kubepods.slice/memory.events", "low 0\nhigh 0\nmax 9\noom 4\noom_kill 7\n");
  Write("kubepods.slice/pod1/memory.events",
        "low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\noom_group_kill 0");
  EXPECT_EQ(CgroupOomKills("0::/kubepods.slice/pod1\n", temp_.path()), 2);
  EXPECT_EQ(CgroupOomKills("0::/kubepods.slice/pod1/no-file-here\n", temp_.path()), 2)
      << "the deepest cgroup that has the file";
}

TEST_F(CgroupLimitsTest, VersionOneCountsTheOomKillsOfTheMemoryController) {
  Write("memory/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 5");
  EXPECT_EQ(CgroupOomKills("4:cpu,memory:/docker/abc\n1:name=systemd:/\n", temp_.path()), 5);
}

TEST_F(CgroupLimitsTest, WithoutTheFilesTheOomKillsAreNotKnown) {
  Write("user.slice/memory.max", "max");
  EXPECT_EQ(CgroupOomKills("0::/user.slice\n", temp_.path()), -1);
  EXPECT_EQ(CgroupOomKills("", temp_.path()), -1);
}

}  // namespace
}  // namespace accumulus
