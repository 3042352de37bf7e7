// What a container may use. A worker in a Kubernetes pod (or any cgroup
// with limits) sees the node's RAM and cores in sysconf, yet the kernel kills
// the pod's processes at its memory limit and throttles them to its CPU
// quota: its CPU slots — their jobs' memory budget and threads — must come
// from the limits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace accumulus {

// The tightest memory limit of the cgroups `self_cgroup` (the text of
// /proc/self/cgroup) names, and of their ancestors, as the files under
// `cgroup_root` (normally /sys/fs/cgroup) say: cgroup v2's memory.max, or
// v1's memory/…/memory.limit_in_bytes. 0: no limit found.
int64_t CgroupMemoryLimitBytes(std::string_view self_cgroup,
                               const std::string& cgroup_root = "/sys/fs/cgroup");

// The tightest CPU quota, in cores, of the same cgroups and their
// ancestors: v2's cpu.max ("QUOTA PERIOD"), or v1's cpu/…/cpu.cfs_quota_us
// over cpu.cfs_period_us. 0: no quota found.
double CgroupCpuLimitCores(std::string_view self_cgroup,
                           const std::string& cgroup_root = "/sys/fs/cgroup");

// The processes the kernel's OOM killer ended in this process's memory
// cgroup and below it, so far: cgroup v2's memory.events, or v1's
// memory.oom_control, "oom_kill N", of the deepest of the cgroups
// `self_cgroup` names (and their ancestors) that has the file. -1: not
// known (no such file: the root cgroup, an old kernel).
int64_t CgroupOomKills(std::string_view self_cgroup,
                       const std::string& cgroup_root = "/sys/fs/cgroup");
// The same for this process, from /proc/self/cgroup.
int64_t OomKills();

// The memory this process may use: the machine's, or its cgroup's limit
// where that is lower.
int64_t UsableMemoryBytes();

// The cores this process may keep busy: those it may run on, or fewer where
// its cgroup's quota allows fewer (whole cores, at least one).
int UsableCores();

}  // namespace accumulus
