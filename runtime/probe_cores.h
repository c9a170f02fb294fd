// Which of this process's CPUs share a physical core, measured rather than
// read from the OS: a virtual machine's CPUs are often the two hardware
// threads of fewer cores while its topology says one thread a core, and two
// threads of one core share its fill buffers, caches and ports, so a kernel
// bound by a core's reads in flight (the CPU tier's attention) runs at half
// speed on each.
//
// A throughput-bound loop (independent multiply-adds, no memory) runs on
// each CPU alone, then on two CPUs at once: CPUs of one core each keep
// about half their rate alone, CPUs of different cores all of it.
// `layerstream probe --cores` prints the groups.
// defines: CoreSharing, group_cores(), probe_core_sharing()
#pragma once

#include <functional>
#include <vector>

#include "runtime/status.h"

namespace ls {

struct CoreSharing {
  struct Pair {
    int a = 0, b = 0;    // CPU numbers
    double ratio = 0;    // the slower one's rate beside the other, over its rate alone
  };
  std::vector<int> cpus;             // tested: this process's CPUs
  std::vector<double> solo;          // each one's loop rate alone (millions of steps/s)
  std::vector<Pair> pairs;           // every pair run
  std::vector<std::vector<int>> cores;  // the CPUs in groups that share a core, in order
  double threshold = 0;              // a pair below this ratio shares a core
};

// Groups `n` CPUs (indices 0..n-1) by whether two of them share a core:
// ratio(i, j) is the pair's ratio (CoreSharing::Pair), asked for each i not
// yet grouped and each later j not yet grouped; a pair below `threshold`
// puts j in i's group. Appends every pair asked to `pairs` (indices).
std::vector<std::vector<int>> group_cores(int n, const std::function<double(int, int)>& ratio,
                                          double threshold,
                                          std::vector<CoreSharing::Pair>* pairs = nullptr);

// Runs the loop for `ms` milliseconds per measurement on this process's
// CPUs (Linux: pinned threads; elsewhere an error). About
// (n + n·(n-1)/2)·ms for n CPUs (16 CPUs and 30 ms: 4 s), and 6·ms more
// for each pair that looks shared (run again twice, each after both CPUs
// alone again). Other work on the machine makes pairs look shared: run it
// on an idle one.
Expected<CoreSharing> probe_core_sharing(int ms = 30, double threshold = 0.75);

}  // namespace ls
