#!/bin/bash
# Session 26, call 5: the CPU attention with done stamps (no reset loop),
# the first two rounds handed out by pool task index; a fixed split
# (thread k: blocks k, k+16, ...) against claiming; the halved tail again;
# timelines with each thread's blocks at 1k.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/diag.txz -C $B || exit 2
A=$B/ls_bench_cpu_attention
f() { grep -E "^ +[0-9]+ +[0-9]+ |timeline" $1 | sed -E 's/^ +([0-9]+ +[0-9]+) +[a-z0-9]+ +[a-z]+ +([0-9]+) +([0-9]+) +([^ ]+) +[0-9]+ +[0-9.]+ +([0-9.]+) .* ([0-9.]+) +([0-9.]+)$/\1 blk \2 \4 us \5 host \6 ratio \7/'; }
for r in 1 2 3; do
  S=claim,fixed; [ $r = 2 ] && S=fixed,claim
  timeout 60 $A --threads 16 --ctx 1024,2048,4096,16384 --split $S --timeline --reps 41 > $O/tl-$r.txt 2>&1
  echo "timeline round $r rc=$?"; f $O/tl-$r.txt
done; el
timeout 60 $A --threads 16 --ctx 1024,2048 --split claim,fixed --tail full,half --reps 41 > $O/tail.txt 2>&1
echo "tail rc=$?"; f $O/tail.txt; el
timeout 60 $A --threads 16 --ctx 1024 --split claim,fixed --timeline-threads --reps 41 > $O/threads.txt 2>&1
echo "threads rc=$?"; cat $O/threads.txt | tail -40; el
