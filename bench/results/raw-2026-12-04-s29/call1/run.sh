#!/bin/bash
# Session 29, call 1. (1) The CPU attention alone, 1k-16k, 16 threads, three
# rounds with orders alternated: a cold block's key prefetch distance
# (--cold-ahead 0,16,64), pinned and not, and the thread pool's hot atomics
# on lines of their own (ls_bench_cpu_attention) against one shared line
# (_oldpool, HEAD 60f39e4); one round at 15 threads. (2) The re-planner's
# predictor with the step's slack on both sides: the sweep of fixed
# --cpu-layers against the default after 4096 and 1 prompt tokens.
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nproc; grep -m1 "model name" /proc/cpuinfo
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1, $2, $7, $10 " us", $13 " GB/s", "host", $14, "ratio", $15}'; }
for r in 1 2 3; do
  P=off,on; X="ls_bench_cpu_attention ls_bench_cpu_attention_oldpool"
  [ $((r % 2)) = 0 ] && P=on,off && X="ls_bench_cpu_attention_oldpool ls_bench_cpu_attention"
  for x in $X; do
    timeout 90 $B/$x --threads 16 --ctx 1024,2048,4096,16384 --reps 41 --cold-ahead 0,16,64 --pin $P > $O/attn-$r-$x.txt 2>&1
    echo "attention round $r $x rc=$?"; grep -E "^ +16 " $O/attn-$r-$x.txt; f $O/attn-$r-$x.txt
  done
done; el
timeout 90 $B/ls_bench_cpu_attention --threads 15,16 --ctx 1024,2048 --reps 41 --cold-ahead 0,16 --pin on > $O/attn-15.txt 2>&1
echo "attention 15 threads rc=$?"; grep -E "^ +1[56] " $O/attn-15.txt | head -4; f $O/attn-15.txt; el
cd $R && BIN=$B OUT=$O/sweep MODELS=$M PARTS="sweep" SWEEP=auto,24,26,28 SWEEP_PROMPTS="4096 1" timeout 330 bash scripts/gpu_hybrid_default_check.sh > $O/sweep.txt 2>&1
echo "sweep rc=$?"; cat $O/sweep.txt | cut -c1-220; el
