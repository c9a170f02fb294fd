#!/bin/bash
# The next call (prepared in session 52, not yet run): issue 14's CPU
# attention at 1k, why it costs about the read plus the arithmetic (the
# prefetch forms, the distance ahead, the taper, and where a call's time
# goes), with nothing running beside it; then, on an H200, session 50's early
# GEMV loads against the plain form (they lost 4.5-5.7 % on session 52's
# H100), and on either card the 8b Q4_K_M default beside its bound.
# Binaries: .gpubin/bin.txz (built at 8d7f62c; no kernel changed since).
# Run: OUT=$OUT LIMIT=240 bash bench/results/raw-2026-12-07-s52/next/run.sh $PWD   (timeout 260; carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-240}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
A=$B/ls_bench_cpu_attention
timeout 70 $A --threads 16 --ctx 1024 --reps 61 --prefetch k1v2n,k2v2n,k1v2f,none --ahead 0,64 > $O/pf.txt 2>&1
echo "prefetch sweep rc=$?"; grep -v "^#\|^caches" $O/pf.txt; el; pack
timeout 40 $A --threads 16 --ctx 1024 --reps 61 --taper on,off --timeline > $O/tl.txt 2>&1
echo "timeline rc=$?"; grep -v "^#\|^caches" $O/tl.txt | head -60; el; pack
timeout 40 $A --threads 16 --ctx 1024,2048,4096,16384 --reps 41 > $O/table.txt 2>&1
echo "table rc=$?"; grep -v "^#\|^caches" $O/table.txt; el; pack
left 120 || { finish; exit 0; }
timeout 60 $B/layerstream synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1; echo "synth 8b rc=$?"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then AB="LS_X=1;LS_GEMV_EARLY=1"; else AB="LS_X=1"; fi
ab_runs b8 2 -m $M/8b-q4_k_m.gguf -n 128; el
finish
