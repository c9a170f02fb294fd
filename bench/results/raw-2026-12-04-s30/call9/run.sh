#!/bin/bash
# Session 30, call 9. The CPU attention at 512 and 1k positions, 16 threads,
# tapered blocks: the short rows' base block (0: 128, the default; 160,
# 192, 224), six rounds with orders alternated, pinned and not.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
cd /tmp
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1, $2, $5, $7, $10 " us", $13 " GB/s", "host", $14, "ratio", $15}'; }
for r in 1 2 3 4 5 6; do
  BL=0,160,192,224; P=off
  [ $((r % 2)) = 0 ] && BL=224,192,160,0
  [ $r -gt 3 ] && P=on
  timeout 120 $B/ls_bench_cpu_attention --threads 16 --ctx 512,1024 --reps 61 --block $BL --pin $P > $O/attn-$r.txt 2>&1
  echo "attention round $r rc=$?"; grep -E "^ +16 " $O/attn-$r.txt; f $O/attn-$r.txt
done; el
