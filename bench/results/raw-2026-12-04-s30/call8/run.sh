#!/bin/bash
# Session 30, call 8. The CPU attention alone at 1k and 2k, 16 threads, with
# the tapered blocks (the default): the base block length (0: 128 up to 1k,
# 256 past it; 64, 192, 256) and claiming the next block ahead to the end
# (--hold 0) or not while a block per thread is left (-1, the default);
# three rounds with orders alternated.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
cd /tmp
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1, $2, $5, $7, $10 " us", $13 " GB/s", "host", $14, "ratio", $15}'; }
for r in 1 2 3; do
  BL=0,64,192,256; H=-1,0
  [ $r = 2 ] && BL=256,192,64,0 && H=0,-1
  timeout 120 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048 --reps 41 --block $BL --hold $H > $O/attn-$r.txt 2>&1
  echo "attention round $r rc=$?"; grep -E "^ +16 " $O/attn-$r.txt; f $O/attn-$r.txt
done; el
