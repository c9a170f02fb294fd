#!/bin/bash
# Session 25, call 2: which unit cases failed in call 1 (the list only), the
# tiled scores with their prefetches spread over the dims and the queries
# transposed, against the row form (heads), by prefetch mode, three rounds
# in alternating order, and one thread.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
mkdir -p /tmp/ut && cd /tmp/ut
LS_TEST_BINARY=$B/layerstream timeout 240 $B/ls_unit_tests -s 2>&1 | grep -E "^TEST CASE:|ERROR|FATAL|failed" | head -c 60000 > $O/unit-fail.txt
echo "unit rc=${PIPESTATUS[0]}"; grep -c "TEST CASE" $O/unit-fail.txt; grep "TEST CASE" $O/unit-fail.txt | sort | uniq -c | sort -rn | head -60; el
for r in 1 2 3; do
  L=tiles,heads; [ $r = 2 ] && L=heads,tiles
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,8192,16384 --layout $L --prefetch k1v2,k2v2,none --reps 41 > $O/attn-$r.txt 2>&1
  echo "round $r rc=$?"; grep -E "^ +[0-9]+ +16 " $O/attn-$r.txt | awk '{print $1,$4,$7,$10,$14,$15}'
done; el
timeout 60 $B/ls_bench_cpu_attention --threads 1 --ctx 1024,16384 --layout tiles,heads --prefetch k1v2,none --reps 15 > $O/attn-1t.txt 2>&1
echo "1t rc=$?"; grep -E "^ +[0-9]+ +1 " $O/attn-1t.txt | awk '{print $1,$4,$7,$10,$14,$15}'; el
