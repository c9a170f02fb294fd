#!/bin/bash
# Session 27, call 2: an idle thread taking a block another claimed ahead
# (--steal on, claiming ahead to the end) against the old default (--steal
# off: no claiming ahead in the last round), 1k-16k, tiles and paged, three
# rounds with the order alternated; then the timeline of both at 1k-2k.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
tar -xJf $R/.gpubin/diag.txz -C $B || exit 2
A=$B/ls_bench_cpu_attention
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1, $4, $7, $11, "host", $(NF-1), "ratio", $NF}'; }
for r in 1 2 3 4; do
  S=on,off; [ $((r % 2)) = 0 ] && S=off,on
  timeout 120 $A --threads 16 --ctx 1024,2048,4096,16384 --layout tiles,paged --steal $S --reps 41 > $O/r$r.txt 2>&1
  echo "round $r rc=$?"; f $O/r$r.txt
done
timeout 90 $A --threads 16 --ctx 1024,2048 --steal on,off --timeline --reps 41 > $O/tl.txt 2>&1
echo "timeline rc=$?"; grep -E "timeline" $O/tl.txt | head -20
