#!/bin/bash
# Session 30, call 12. The CPU attention at 1k and 2k, 16 and 12 threads,
# 201 calls with the timeline: in how many calls every thread of the pool
# took a block, and the median call of each kind; then the same without the
# timeline's clocks.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
cd /tmp
for r in 1 2; do
  timeout 60 $B/ls_bench_cpu_attention --threads 16,12 --ctx 1024,2048 --reps 201 --timeline > $O/tl-$r.txt 2>&1
  echo "timeline round $r rc=$?"; grep -E "^ +[0-9]+ +1[26] |timeline|calls where|^ +1[26] " $O/tl-$r.txt | cut -c1-230
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048 --reps 201 > $O/plain-$r.txt 2>&1
  echo "plain round $r rc=$?"; grep -E "^ +[0-9]+ +16 |^ +16 " $O/plain-$r.txt | cut -c1-200
done; el
