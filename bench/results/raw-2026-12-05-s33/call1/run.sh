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
cd $O && tar -czf out.tgz sw-*.txt all-*.txt tl-*.txt && rm -f sw-*.txt all-*.txt tl-*.txt
