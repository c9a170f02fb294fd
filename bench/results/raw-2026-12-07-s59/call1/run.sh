#!/bin/bash
# Session 59, call 1: a split call's blocks in spans (AttnCpuTuning::spans:
# the blocks in row order cut into spans x P runs of equal positions, one
# thread's each, in turn) against taking them from the counter (spans 0, the
# default), alternated in one run, three rounds; the same with the pool's
# waits polling with the pause hint (LS_POOL_PAUSE_US=20) against yielding;
# session 58's call 4 knobs (shorter blocks, the fold's prefetch) beside
# spans; a timeline at 1k; 4k-16k for what spans cost where the line is met.
# spans-attn.txz: ls_bench_cpu_attention built at this commit's tree.
# Run: bash bench/results/raw-2026-12-07-s59/call1/run.sh $PWD (timeout 420; carry .gpubin/spans-attn.txz)
set -u
R=$1; B=/tmp/b; mkdir -p $B; tar -xJf "$R/.gpubin/spans-attn.txz" -C $B || exit 2
A=$B/ls_bench_cpu_attention_spans
row() { grep -E "^ +[0-9]+ +16 " "$1" | awk '{printf "%s %s %s %s us %s; ", $1, $5, $7, $10, $NF}'; }
lscpu | grep -E "Model name|^CPU\(s\)|L3"
for r in 1 2 3; do
  timeout 60 $A --ctx 1024,2048 --reps 31 --spans 0,1,2,4 > $OUT/spans-$r.txt 2>&1
  echo "spans round $r: host $(awk '/^ +16 /{print $2; exit}' $OUT/spans-$r.txt) GB/s"; row $OUT/spans-$r.txt; echo
  for pause in 20 0; do
    LS_POOL_PAUSE_US=$pause timeout 60 $A --ctx 1024,2048 --reps 31 --spans 0,1 > $OUT/pause$pause-$r.txt 2>&1
    echo "LS_POOL_PAUSE_US=$pause round $r:"; row $OUT/pause$pause-$r.txt; echo
  done
  timeout 60 $A --ctx 1024 --reps 31 --spans 0,1 --block 0,64 --fold-pf off,on > $OUT/knobs-$r.txt 2>&1
  echo "knobs round $r:"; row $OUT/knobs-$r.txt; echo
done
timeout 60 $A --ctx 1024 --reps 41 --spans 0,1,2 --timeline > $OUT/tl.txt 2>&1
grep -E "^ +1024 |timeline|calls where" $OUT/tl.txt
for r in 1 2; do
  timeout 90 $A --ctx 4096,16384 --reps 21 --spans 0,1,2 > $OUT/long-$r.txt 2>&1
  echo "long round $r:"; row $OUT/long-$r.txt; echo
done
