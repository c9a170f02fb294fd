#!/bin/bash
# Session 30, call 13 (not run: no device time was left; for the next
# session). The CPU attention bench with its fill pools gone before anything
# is timed (until now the pool that first-touched the caches lived on, its
# 15 idle workers spinning beside the pool under test): 16 threads, 1k-16k,
# three rounds, then the timeline's count of calls where all 16 threads
# took a block; then the same with the pool's idle spin bounded in time
# (LS_POOL_SPIN_US=1000), alternated.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
cd /tmp
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1, $2, $7, $10 " us", $13 " GB/s", "host", $14, "ratio", $15}'; }
for r in 1 2 3 4; do
  S=""; [ $((r % 2)) = 0 ] && S=1000
  LS_POOL_SPIN_US=$S timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --reps 41 > $O/attn-$r.txt 2>&1
  echo "attention round $r LS_POOL_SPIN_US=$S rc=$?"; grep -E "^ +16 " $O/attn-$r.txt; f $O/attn-$r.txt
done; el
timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048 --reps 201 --timeline > $O/tl.txt 2>&1
echo "timeline rc=$?"; grep -E "^ +[0-9]+ +16 |timeline|calls where" $O/tl.txt | cut -c1-230; el
