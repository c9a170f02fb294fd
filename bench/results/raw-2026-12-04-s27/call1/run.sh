#!/bin/bash
# Session 27, call 1: the CPU attention's prefetch at 1k-16k on the device.
# k1v2n (the default) against k1v2nv (values a block ahead), each with
# software prefetches on every line, every 2nd, 4th, 8th (the L2 streamer
# left the rest); three rounds, orders alternated; then a timeline and the
# read-only rows at 1k-2k.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
tar -xJf $R/.gpubin/diag.txz -C $B || exit 2
A=$B/ls_bench_cpu_attention
lscpu > $O/lscpu.txt
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1, $8, $11, "host", $(NF-1), "ratio", $NF}'; }
for r in 1 2 3; do
  P=k1v2n,k1v2nv; E=1,2,4,8
  [ $r = 2 ] && P=k1v2nv,k1v2n && E=8,4,2,1
  timeout 120 $A --threads 16 --ctx 1024,2048,4096,16384 --prefetch $P --every $E --reps 41 > $O/r$r.txt 2>&1
  echo "round $r rc=$?"; f $O/r$r.txt
done
timeout 90 $A --threads 16 --ctx 1024,2048 --prefetch k1v2n,k1v2nv --every 1,2 --timeline --read --reps 41 > $O/tl.txt 2>&1
echo "timeline rc=$?"; grep -E "timeline|read" $O/tl.txt | head -20
