#!/bin/bash
# The next call (prepared in session 53, not yet run). (1) The CPU
# attention's tests on the Xeon at this commit (AVX-512). (2) A shared f16
# block converted to f32 once (--widen on) against as read, on a verify
# step's 8 tokens at 4k and 16k, alternated: it lost on the 2-core Zen
# machine; the Xeon's f16 conversion costs more. (3) Issue 14's 1k line,
# eight runs. (4) On an H200 only, the 8b Q4_K_M with session 50's early
# GEMV loads against the plain form (the H100 ran it in session 52).
# Binaries: .gpubin/bin.txz (scripts/gpu_pack.sh at the commit that adds this file or later).
# Run: OUT=$OUT LIMIT=200 bash bench/results/raw-2026-12-07-s53/next/run.sh $PWD   (timeout 220; carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-200}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
A=$B/ls_bench_cpu_attention
timeout 90 $B/ls_unit_tests -tc="cpu_attention*" > $O/tests.txt 2>&1
echo "cpu_attention tests rc=$?"; grep -E "SKIPPED|test cases|assertions|ERROR" $O/tests.txt | head; el
for r in 1 2 3; do
  for w in off on; do
    timeout 30 $A --threads 16 --ctx 4096,16384 --tokens 8 --widen $w --reps 21 > $O/widen-$w-$r.txt 2>&1
    echo "widen $w round $r:"; grep -E '^ +[0-9]+ +16 ' $O/widen-$w-$r.txt
  done
done; el; pack
for r in 1 2 3 4 5 6 7 8; do
  timeout 20 $A --threads 16 --ctx 1024 --reps 61 > $O/k1-$r.txt 2>&1
  echo "1k run $r: $(grep -E '^ +1024 +16 ' $O/k1-$r.txt)"
done; el; pack
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && left 100; then
  timeout 60 $B/layerstream synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1; echo "synth 8b rc=$?"
  AB="LS_X=1;LS_GEMV_EARLY=1" ab_runs b8 2 -m $M/8b-q4_k_m.gguf -n 128; el
fi
finish
