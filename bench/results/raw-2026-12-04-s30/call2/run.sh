#!/bin/bash
# Session 30, call 2. The CPU attention alone, 1k-16k, 16 threads: a split
# call's blocks from one counter in block-major order (claim, the default)
# against runs of the row-major order, one a thread, taken from the front
# and the others' from the back (ranges: a thread folds its own blocks in
# its own cache); pinned and not; five rounds with orders alternated; then
# the timeline of both (a thread's time spent folding).
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nproc; grep -m1 "model name" /proc/cpuinfo; lscpu | grep -E "Thread|Core|Socket|MHz" 
mkdir -p $R/.ut && cd $R/.ut
timeout 120 $B/ls_unit_tests -tc="cpu_attention*" > $O/unit.txt 2>&1
echo "unit rc=$?"; grep -E "test cases|assertions" $O/unit.txt; el
cd /tmp
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1, $2, $7, $10 " us", $13 " GB/s", "host", $14, "ratio", $15}'; }
for r in 1 2 3 4 5; do
  S=claim,ranges; P=off,on
  [ $((r % 2)) = 0 ] && S=ranges,claim && P=on,off
  timeout 90 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --reps 41 --sched $S --pin $P > $O/attn-$r.txt 2>&1
  echo "attention round $r rc=$?"; grep -E "^ +16 " $O/attn-$r.txt; f $O/attn-$r.txt
done; el
timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,16384 --reps 41 --sched claim,ranges --timeline > $O/tl.txt 2>&1
echo "timeline rc=$?"; grep -E "^ +[0-9]+ +16|timeline" $O/tl.txt | cut -c1-260; el
timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024 --reps 41 --sched ranges --timeline-threads > $O/tlt.txt 2>&1
echo "timeline threads rc=$?"; cat $O/tlt.txt | tail -20 | cut -c1-300; el
