#!/bin/bash
# Session 53, call 1. (1) The CPU attention's tests on the Xeon (the AVX-512
# variant, which the 2-core dev machine cannot run), after tokens of one
# sequence began to share their common blocks. (2) That sharing on a verify
# step's 8 tokens of a 70b layer at 4k and 16k, on and off. (3) Issue 14 at
# 1k: the pool's waits polling with pause (LS_POOL_PAUSE_US) against yield,
# alternated, with the timeline; session 52's prepared sweep (prefetch forms
# and distance); the 1k-16k table. (4) On an H200 only, the 8b Q4_K_M with
# session 50's early GEMV loads against the plain form (the H100 ran it in
# session 52).
# Binaries: .gpubin/bin.txz (scripts/gpu_pack.sh at f913118; kernels unchanged since).
# Run: OUT=$OUT LIMIT=240 bash bench/results/raw-2026-12-07-s53/call1/run.sh $PWD   (timeout 260; carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-240}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
A=$B/ls_bench_cpu_attention
timeout 90 $B/ls_unit_tests -tc="cpu_attention*" > $O/tests.txt 2>&1
echo "cpu_attention tests rc=$?"; grep -E "SKIPPED|test cases|assertions|ERROR" $O/tests.txt | head; el
timeout 60 $A --threads 16 --ctx 4096,16384 --tokens 1,8 --share on,off --reps 21 > $O/share.txt 2>&1
echo "share rc=$?"; grep -v "^#\|^caches" $O/share.txt; el; pack
for r in 1 2; do
  for e in LS_X=1 LS_POOL_PAUSE_US=100; do
    env $e timeout 30 $A --threads 16 --ctx 1024 --reps 61 --timeline > $O/pause-$e-$r.txt 2>&1
    echo "1k $e round $r rc=$?"; grep -v "^#\|^caches\|^bound\|threads   GB\|^ *16 *[0-9.]* *[0-9.]* *[0-9.]*$" $O/pause-$e-$r.txt | grep -v "^$"
  done
done; el; pack
left 80 || { finish; exit 0; }
timeout 50 $A --threads 16 --ctx 1024 --reps 41 --prefetch k1v2n,k2v2n,k1v2f,none --ahead 0,64 > $O/pf.txt 2>&1
echo "prefetch sweep rc=$?"; grep -v "^#\|^caches" $O/pf.txt; el; pack
left 60 || { finish; exit 0; }
timeout 40 $A --threads 16 --ctx 1024,2048,4096,16384 --reps 41 > $O/table.txt 2>&1
echo "table rc=$?"; grep -v "^#\|^caches" $O/table.txt; el; pack
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && left 100; then
  timeout 60 $B/layerstream synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1; echo "synth 8b rc=$?"
  AB="LS_X=1;LS_GEMV_EARLY=1" ab_runs b8 2 -m $M/8b-q4_k_m.gguf -n 128; el
fi
finish
