#!/bin/bash
# Session 25, call 5: tiled keys with the thread's next block's keys fetched
# into L2 during the value loop (k1v2n, the new default) against without
# (k1v2) and the row form (heads), three rounds in alternating order; the
# AVX-512 attention tests first.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
mkdir -p $R/.ut && cd $R/.ut
timeout 120 $B/ls_unit_tests -tc="cpu_attention*,kv_cache*" > $O/unit.txt 2>&1
echo "unit rc=$?"; grep -E "test cases|SKIPPED" $O/unit.txt; el
cd /tmp
for r in 1 2 3; do
  for L in tiles heads; do
    [ $r = 2 ] && L=$([ $L = tiles ] && echo heads || echo tiles)
    P=k1v2; [ $L = tiles ] && P=k1v2n,k1v2; [ $L = tiles ] && [ $r = 2 ] && P=k1v2,k1v2n
    timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,8192,16384 --layout $L --prefetch $P --reps 41 > $O/attn-$r-$L.txt 2>&1
    echo "round $r $L rc=$?"; grep -E "^ +[0-9]+ +16 " $O/attn-$r-$L.txt | awk '{print $1,$4,$7,$10,$14,$15}'
  done
done; el
timeout 60 $B/ls_bench_cpu_attention --threads 1 --ctx 1024,16384 --prefetch k1v2n,k1v2 --reps 15 > $O/attn-1t.txt 2>&1
echo "1t rc=$?"; grep -E "^ +[0-9]+ +1 " $O/attn-1t.txt | awk '{print $1,$4,$7,$10,$14,$15}'; el
