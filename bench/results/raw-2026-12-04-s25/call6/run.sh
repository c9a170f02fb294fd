#!/bin/bash
# Session 25, call 6: claim-ahead always (hold 0, the new default) against
# stopping while at most a block per thread is left (hold 16, call 5's
# rule); blocks of 64 at 1k-2k; the row form beside; three rounds. The
# merge and finish are now one copy per ISA (AVX-512 here).
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
mkdir -p $R/.ut && cd $R/.ut
timeout 120 $B/ls_unit_tests -tc="cpu_attention*,kv_cache*" > $O/unit.txt 2>&1
echo "unit rc=$?"; grep -E "test cases|SKIPPED" $O/unit.txt; el
cd /tmp
for r in 1 2 3; do
  H=0,16; [ $r = 2 ] && H=16,0
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,8192,16384 --hold $H --reps 41 > $O/attn-$r.txt 2>&1
  echo "round $r rc=$?"; grep -E "^ +[0-9]+ +16 " $O/attn-$r.txt | awk '{print $1,$4,$5,$7,$10,$14,$15}'
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048 --block 64 --reps 41 > $O/b64-$r.txt 2>&1
  grep -E "^ +[0-9]+ +16 " $O/b64-$r.txt | awk '{print $1,$4,$5,$7,$10,$14,$15}'
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,16384 --layout heads --reps 41 > $O/heads-$r.txt 2>&1
  grep -E "^ +[0-9]+ +16 " $O/heads-$r.txt | awk '{print $1,$4,$5,$7,$10,$14,$15}'
done; el
