#!/bin/bash
# Session 26, call 9: with the fold as blocks finish and partials fetched for
# writing (433ff1a), are blocks of 128 now better than 256 at 2k (finer
# ends, per-task costs down), and does a later claim-ahead stop (hold 32)
# help at 1k-4k? Three rounds, orders alternated.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/diag.txz -C $B || exit 2
A=$B/ls_bench_cpu_attention
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | sed -E 's/^ +([0-9]+ +[0-9]+) +[a-z0-9]+ +([a-z]+) +([0-9]+) +([0-9]+) +([^ ]+) +[0-9]+ +[0-9.]+ +([0-9.]+) .* ([0-9.]+) +([0-9.]+)$/\1 blk \3 \5 us \6 host \7 ratio \8/'; }
for r in 1 2 3; do
  K=0,128; H=-1,32; [ $r = 2 ] && K=128,0 && H=32,-1
  timeout 60 $A --threads 16 --ctx 1024,2048,4096 --block $K --hold $H --reps 41 > $O/r-$r.txt 2>&1
  echo "round $r rc=$?"; f $O/r-$r.txt
done; el
