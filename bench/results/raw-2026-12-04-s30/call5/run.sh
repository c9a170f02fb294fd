#!/bin/bash
# Session 30, call 5. (1) The whole GPU suite on this session's tree (the
# CPU attention's blocks changed: the CUDA backend's tests compare against
# the CPU). (2) The CPU attention alone at 12, 14 and 16 threads, tapered
# blocks (the default), three rounds with the thread order alternated: is
# the 1k call's loss the threads a busy machine does not schedule in time?
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
cd /tmp
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1, $2, $7, $10 " us", $13 " GB/s", "host", $14, "ratio", $15}'; }
for r in 1 2 3; do
  T=16,14,12; [ $r = 2 ] && T=12,14,16
  timeout 90 $B/ls_bench_cpu_attention --threads $T --ctx 1024,2048,4096,16384 --reps 41 > $O/attn-$r.txt 2>&1
  echo "attention round $r rc=$?"; grep -E "^ +1[246] " $O/attn-$r.txt; f $O/attn-$r.txt
done; el
timeout 60 $B/ls_bench_cpu_attention --threads 12 --ctx 1024 --reps 41 --timeline-threads > $O/tlt12.txt 2>&1
echo "timeline 12 rc=$?"; tail -16 $O/tlt12.txt | cut -c1-300; el
mkdir -p $R/.ut && cd $R/.ut
timeout 330 $B/ls_gpu_tests > $O/gpu-tests.txt 2>&1
echo "gpu tests rc=$?"; grep -E "test cases|assertions|SKIPPED" $O/gpu-tests.txt; grep -B2 -A6 "ERROR" $O/gpu-tests.txt | head -40; el
