#!/bin/bash
# Session 26, call 3 (padded done flags and claim counter): where a split call's time goes at 1k-16k
# (ls_bench_cpu_attention --timeline): thread start lag, a thread's first
# (cold), middle and last blocks, busy time, the spread of the threads'
# ends, the last fold; folding as blocks finish (default) or at the end.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/diag.txz -C $B || exit 2
A=$B/ls_bench_cpu_attention
f() { grep -E "^ +[0-9]+ +[0-9]+ |timeline" $1 | sed -E 's/^ +([0-9]+ +[0-9]+) +[a-z0-9]+ +[a-z]+ +([0-9]+) +([0-9]+) +([^ ]+) +[0-9]+ +[0-9.]+ +([0-9.]+) .* ([0-9.]+) +([0-9.]+)$/\1 blk \2 \4 us \5 host \6 ratio \7/'; }
for r in 1 2 3; do
  timeout 60 $A --threads 16 --ctx 1024,2048,4096,16384 --fold done,end --timeline --reps 41 > $O/tl-$r.txt 2>&1
  echo "timeline round $r rc=$?"; f $O/tl-$r.txt
done; el
