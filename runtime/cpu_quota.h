// The CPU time a Linux control group allows this process, as a number of
// CPUs: a container started with `docker run --cpus 4` may run on every CPU
// of the host (its affinity mask is all of them) but only for 4 CPUs' worth
// of time each period, so a pool of one thread per CPU it sees would be
// throttled to a crawl. default_thread_count() (runtime/thread_pool.h)
// takes the smaller of this and the CPUs the process may run on.
// defines: parse_cgroup_path(), parse_cpu_max(), parse_cfs_quota(), cgroup_cpu_limit()
#pragma once

#include <string>
#include <string_view>

namespace ls {

// The process's cgroup path for the cpu controller, from /proc/self/cgroup's
// text: cgroup v2's "0::/path", or v1's line whose controllers include
// "cpu" ("4:cpu,cpuacct:/path"); v1 wins where both are present and v1
// names cpu. Empty if neither is there.
std::string parse_cgroup_path(std::string_view proc_self_cgroup, bool* v1 = nullptr);

// CPUs from cgroup v2's cpu.max ("max 100000": none, 0; "150000 100000": 2,
// rounded up); 0 also for text that is not of that form.
int parse_cpu_max(std::string_view cpu_max);

// CPUs from cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us (quota -1:
// none, 0); rounded up.
int parse_cfs_quota(std::string_view quota_us, std::string_view period_us);

// This process's limit (Linux, read once), or 0 where there is none or it
// cannot be read.
int cgroup_cpu_limit();

}  // namespace ls
