#!/bin/bash
# Session 26, call 1: issue 14's CPU attention at 1k-4k. Is the row's fold
# on the critical path (fold as blocks finish vs by the last block), do
# blocks of 64 at 1k balance better now that the fold costs little, and
# does the first block's key prefetch distance matter; beside the pure
# read of the same tasks. The machine's CPU first (SMT, caches).
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/diag.txz -C $B || exit 2
lscpu > $O/lscpu.txt; grep -E "Model name|Thread|Core|Socket|L1d|L2|L3|MHz|NUMA node" $O/lscpu.txt
A=$B/ls_bench_cpu_attention
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1,$2,$5,$6,$7,$10,$14,$15}'; }
for r in 1 2 3; do
  F=done,end; [ $r = 2 ] && F=end,done
  timeout 60 $A --threads 16 --ctx 1024,2048,4096 --block 0,64,128 --fold $F --reps 41 > $O/fold-$r.txt 2>&1
  echo "fold round $r rc=$?"; f $O/fold-$r.txt
done; el
timeout 60 $A --threads 16 --ctx 1024,2048,4096,16384 --read --reps 41 > $O/read.txt 2>&1
echo "read rc=$?"; f $O/read.txt; el
for r in 1 2; do
  timeout 60 $A --threads 16 --ctx 1024,2048 --block 0,64 --ahead 0,32,64,128 --reps 41 > $O/ahead-$r.txt 2>&1
  echo "ahead round $r rc=$?"; f $O/ahead-$r.txt
done; el
timeout 60 $A --threads 8,12,16 --ctx 1024,4096 --block 0,64 --reps 41 > $O/threads.txt 2>&1
echo "threads rc=$?"; f $O/threads.txt; el
timeout 60 $A --threads 16 --ctx 1024,2048,4096,8192,16384 --reps 41 > $O/default.txt 2>&1
echo "default rc=$?"; f $O/default.txt; el
