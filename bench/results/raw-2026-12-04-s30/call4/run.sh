#!/bin/bash
# Session 30, call 4. The CPU attention alone, 1k-16k, 16 threads: a row's
# first and last block cut in halves (--taper on, the new default) against
# uniform blocks (off); pinned and not; five rounds with orders
# alternated; then the timeline of both.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
mkdir -p $R/.ut && cd $R/.ut
timeout 120 $B/ls_unit_tests -tc="cpu_attention*" > $O/unit.txt 2>&1
echo "unit rc=$?"; grep -E "test cases|assertions" $O/unit.txt; el
cd /tmp
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1, $2, $7, $10 " us", $13 " GB/s", "host", $14, "ratio", $15}'; }
for r in 1 2 3 4 5; do
  S=on,off; P=off,on
  [ $((r % 2)) = 0 ] && S=off,on && P=on,off
  timeout 90 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --reps 41 --taper $S --pin $P > $O/attn-$r.txt 2>&1
  echo "attention round $r rc=$?"; grep -E "^ +16 " $O/attn-$r.txt; f $O/attn-$r.txt
done; el
timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,16384 --reps 41 --taper on,off --timeline > $O/tl.txt 2>&1
echo "timeline rc=$?"; grep -E "^ +[0-9]+ +16|timeline" $O/tl.txt | cut -c1-260; el
timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024 --reps 41 --timeline-threads > $O/tlt.txt 2>&1
echo "timeline threads rc=$?"; tail -20 $O/tlt.txt | cut -c1-300; el
