// The memory a container may use. A worker in a Kubernetes pod (or any
// cgroup with a memory limit) sees the node's RAM in sysconf, yet the kernel
// kills the pod's processes at the pod's limit; its CPU slots' memory — the
// budget of their jobs — must come from the limit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace accumulus::worker {

// The tightest memory limit of the cgroups `self_cgroup` (the text of
// /proc/self/cgroup) names, and of their ancestors, as the files under
// `cgroup_root` (normally /sys/fs/cgroup) say: cgroup v2's memory.max, or
// v1's memory/…/memory.limit_in_bytes. 0: no limit found.
int64_t CgroupMemoryLimitBytes(std::string_view self_cgroup,
                               const std::string& cgroup_root = "/sys/fs/cgroup");

// The memory this process may use: the machine's, or its cgroup's limit
// where that is lower.
int64_t UsableMemoryBytes();

}  // namespace accumulus::worker
