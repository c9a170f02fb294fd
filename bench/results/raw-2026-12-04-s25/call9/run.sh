#!/bin/bash
# Session 25, call 9: the knobs at short contexts with the final kernel
# (same binary as call 8): claim-ahead hold 0 / 8 / 16 (16 = the default on
# 16 threads) at 1k and 2k, blocks of 256 at 2k; three rounds, orders
# alternated.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
for r in 1 2 3; do
  H=0,8,16; [ $r = 2 ] && H=16,8,0
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048 --hold $H --reps 41 > $O/hold-$r.txt 2>&1
  echo "round $r rc=$?"; grep -E "^ +[0-9]+ +16 " $O/hold-$r.txt | awk '{print $1,$5,$7,$10,$14,$15}'
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 2048 --block 128,256 --reps 41 > $O/block-$r.txt 2>&1
  grep -E "^ +[0-9]+ +16 " $O/block-$r.txt | awk '{print $1,$5,$7,$10,$14,$15}'
done
