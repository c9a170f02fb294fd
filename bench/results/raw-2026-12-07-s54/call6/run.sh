#!/bin/bash
# Session 54, call 6: are the slow threads of a 1k call (call 5: some
# threads' blocks take twice others') the same from call to call? Threads
# pinned one a CPU (--pin on), each thread's blocks in the median call,
# five runs; then unpinned, two runs.
# Run: OUT=$OUT LIMIT=100 bash bench/results/raw-2026-12-07-s54/call6/run.sh $PWD (timeout 120; carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-100}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
A=$B/ls_bench_cpu_attention
for r in 1 2 3 4 5; do
  timeout 30 $A --threads 16 --ctx 1024 --reps 21 --pin on --timeline-threads > $O/pin-$r.txt 2>&1
  echo "pinned run $r rc=$?"; grep -E "^ +1024|timeline|thread " $O/pin-$r.txt
done
for r in 1 2; do
  timeout 30 $A --threads 16 --ctx 1024 --reps 21 --timeline-threads > $O/free-$r.txt 2>&1
  echo "unpinned run $r rc=$?"; grep -E "^ +1024|timeline|thread " $O/free-$r.txt
done
el; finish
