#!/bin/bash
# Session 33, call 1: issue 14's last line (the CPU attention at 1k >= 0.70
# of the host bound). Three changes aimed at a short call's ends, each a
# switch, swept in one call: a fold fetching its lines first (--fold-pf),
# the first blocks given by pool task (--start static), the pool's waits
# polling with pause before yielding (LS_POOL_PAUSE_US=50, alternate
# rounds), each KV head's query heads as two rows run whole (--group-split 2); blocks of 128 (the rule) and 256 at 1k-2k; the read-only floor.
# Run: OUT=$OUT bash bench/results/raw-2026-12-05-s33/call1/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
cd /tmp
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1, $2, $5, $7, $10 " us", $13 " GB/s", "host", $14, "ratio", $15}'; }
for r in 1 2 3 4 5 6; do
  P=0; [ $((r % 2)) = 0 ] && P=50
  LS_POOL_PAUSE_US=$P timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048 --block 0,256 --fold-pf off,on --start claim,static --group-split 1,2 --reps 41 > $O/sw-$r.txt 2>&1
  echo "sweep round $r LS_POOL_PAUSE_US=$P rc=$?"; f $O/sw-$r.txt
done; el
for r in 1 2 3 4; do
  P=0; [ $((r % 2)) = 0 ] && P=50
  LS_POOL_PAUSE_US=$P timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --fold-pf off,on --start claim,static --group-split 1,2 --reps 41 --read > $O/all-$r.txt 2>&1
  echo "contexts round $r LS_POOL_PAUSE_US=$P rc=$?"; f $O/all-$r.txt
done; el
for P in 0 50; do
  LS_POOL_PAUSE_US=$P timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024 --fold-pf off,on --start claim,static --reps 201 --timeline > $O/tl-$P.txt 2>&1
  echo "timeline LS_POOL_PAUSE_US=$P rc=$?"; grep -E "k1v2n|timeline|calls where" $O/tl-$P.txt | cut -c1-250
done; el
# (2) Issues 17/18: is the CPU GEMM at 8 tokens bound by its arithmetic or
# by its reads? The same kernels on weights in L2 (--shapes l2) against
# the 70b's from DRAM, 1 and 16 threads, the tile kernel and AMX.
m() { grep -E "^q[46]_K" $1 | tr -s ' ' | cut -d" " -f1-9,15,18,20,21; }
timeout 150 $B/ls_bench_cpu_matmul --threads 1,16 --ntok 1,8,16 --types q4_k,q6_k --act q8 --path dot,gemm --amx off,on --shapes l2 --weights-gib 0 --reps 9 > $O/mm-l2.txt 2>&1
echo "matmul l2 rc=$?"; m $O/mm-l2.txt; el
timeout 200 $B/ls_bench_cpu_matmul --threads 16 --ntok 1,8 --types q4_k,q6_k --act q8 --path dot,gemm --amx off,on --mem anon,huge --shapes 70b --reps 5 > $O/mm-70b.txt 2>&1
echo "matmul 70b rc=$?"; m $O/mm-70b.txt; el
cd $O && tar -czf out.tgz sw-*.txt all-*.txt tl-*.txt mm-*.txt && rm -f sw-*.txt all-*.txt tl-*.txt mm-*.txt
