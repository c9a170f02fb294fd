#!/bin/bash
# Session 53, call 1. (1) The CPU attention's tests on the Xeon (the AVX-512
# variant, which the 2-core dev machine cannot run), after tokens of one
# sequence began to share their common blocks. (2) That sharing on a verify
# step's 8 tokens of a 70b layer at 4k and 16k, on and off. (3) Issue 14 at
# 1k: session 52's prepared sweep (prefetch forms and distance, taper and
# timeline, the 1k-16k table). (4) The 8b Q4_K_M resident beside its bound;
# on an H200, session 50's early GEMV loads against the plain form.
# Binaries: .gpubin/bin.txz (scripts/gpu_pack.sh at this commit).
# Run: OUT=$OUT LIMIT=280 bash bench/results/raw-2026-12-07-s53/call1/run.sh $PWD   (timeout 300; carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-280}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
A=$B/ls_bench_cpu_attention
timeout 90 $B/ls_unit_tests -tc="cpu_attention*" > $O/tests.txt 2>&1
echo "cpu_attention tests rc=$?"; grep -E "SKIPPED|test cases|assertions|ERROR" $O/tests.txt | head; el
timeout 60 $A --threads 16 --ctx 4096,16384 --tokens 1,8 --share on,off --reps 21 > $O/share.txt 2>&1
echo "share rc=$?"; grep -v "^#\|^caches" $O/share.txt; el; pack
timeout 60 $A --threads 16 --ctx 1024 --reps 61 --prefetch k1v2n,k2v2n,k1v2f,none --ahead 0,64 > $O/pf.txt 2>&1
echo "prefetch sweep rc=$?"; grep -v "^#\|^caches" $O/pf.txt; el; pack
timeout 40 $A --threads 16 --ctx 1024 --reps 61 --taper on,off --timeline > $O/tl.txt 2>&1
echo "timeline rc=$?"; grep -v "^#\|^caches" $O/tl.txt | head -40; el; pack
timeout 40 $A --threads 16 --ctx 1024,2048,4096,16384 --reps 41 > $O/table.txt 2>&1
echo "table rc=$?"; grep -v "^#\|^caches" $O/table.txt; el; pack
left 100 || { finish; exit 0; }
timeout 60 $B/layerstream synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1; echo "synth 8b rc=$?"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then AB="LS_X=1;LS_GEMV_EARLY=1"; else AB="LS_X=1"; fi
ab_runs b8 2 -m $M/8b-q4_k_m.gguf -n 128; el
finish
