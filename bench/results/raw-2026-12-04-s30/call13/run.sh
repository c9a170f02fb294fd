#!/bin/bash
# Session 30, call 13. The CPU attention bench with its fill pools gone
# before anything is timed (until now the pool that first-touched the
# caches lived on, its 15 idle workers spinning beside the pool under
# test): 16 threads, 1k-16k, three rounds, then the timeline's count of
# calls where all 16 threads took a block.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
cd /tmp
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1, $2, $7, $10 " us", $13 " GB/s", "host", $14, "ratio", $15}'; }
for r in 1 2 3; do
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --reps 41 > $O/attn-$r.txt 2>&1
  echo "attention round $r rc=$?"; grep -E "^ +16 " $O/attn-$r.txt; f $O/attn-$r.txt
done; el
timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048 --reps 201 --timeline > $O/tl.txt 2>&1
echo "timeline rc=$?"; grep -E "^ +[0-9]+ +16 |timeline|calls where" $O/tl.txt | cut -c1-230; el
