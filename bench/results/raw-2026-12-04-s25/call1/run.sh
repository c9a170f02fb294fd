#!/bin/bash
# Session 25, call 1: tiled keys in the CPU tier's KvCache (AttnKv::k_tiled).
# Their bits on AVX-512 (the unit tests, all of them: also session 24's owed
# pipeline chunk-form case and the lane-form dots after its fold), the hybrid
# GPU tests (KV rows moving between tiers through the new layout), then the
# attention bench: tiles against heads (the old layout and scores loop) in
# the same call, three rounds in alternating order, and one thread.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nproc; grep -m1 "model name" /proc/cpuinfo; el
mkdir -p /tmp/ut && cd /tmp/ut
LS_TEST_BINARY=$B/layerstream timeout 240 $B/ls_unit_tests > $O/unit.txt 2>&1
echo "unit rc=$?"; grep -E "test cases|assertions|SKIPPED" $O/unit.txt | sort | uniq -c | head; el
for r in 1 2 3; do
  L=tiles,heads; [ $r = 2 ] && L=heads,tiles
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,8192,16384 --layout $L --reps 41 --json $O/attn-$r.json > $O/attn-$r.txt 2>&1
  echo "round $r rc=$?"; grep -E "^ +[0-9]+ +16 " $O/attn-$r.txt | awk '{print $1,$4,$10,$14,$15}'
done; el
timeout 60 $B/ls_bench_cpu_attention --threads 1,16 --ctx 1024,16384 --layout tiles,heads --reps 21 --read > $O/attn-read.txt 2>&1
echo "read rc=$?"; grep -E "^ +[0-9]+ +[0-9]+ " $O/attn-read.txt | awk '{print $1,$2,$3,$4,$10,$14,$15}'; el
timeout 150 $B/ls_gpu_tests -tc="cuda streaming: hybrid*,cuda kv*" > $O/gpu.txt 2>&1
echo "gpu rc=$?"; grep -E "test cases|assertions|SKIPPED" $O/gpu.txt; el
