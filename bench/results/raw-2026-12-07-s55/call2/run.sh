#!/bin/bash
# Session 55, call 2: call 1 cut to what 400 device seconds hold (the rest
# went to refused starts). The prefetch's GPU tests, then the 8b Q4_K_M
# resident, `bench -n 128`, with the L2 prefetch off (the default), on
# (16 / 4 MiB) and on with each GEMV block prefetching 8 MiB ahead,
# alternated, ROUNDS rounds (default 2).
# Run: OUT=$OUT LIMIT=170 bash bench/results/raw-2026-12-07-s55/call2/run.sh $PWD (timeout 190)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-170}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
LS_L2_PREFETCH=16 LS_L2_PREFETCH_GEMV=4 timeout 60 $B/ls_gpu_tests -tc="*L2 prefetch*,decode fused*" \
  > $O/tests.txt 2>&1
echo "gpu tests rc=$?"; grep -E "test cases|assertions|ERROR|FAILED" $O/tests.txt | head -8; el
L=$B/layerstream
timeout 60 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1; echo "synth rc=$?"; el
ON="LS_L2_PREFETCH=16 LS_L2_PREFETCH_GEMV=4"; OFF="LS_L2_PREFETCH=0 LS_L2_PREFETCH_GEMV=0"
AB="$OFF;$ON;$ON LS_GEMV_AHEAD=8 LS_L2_PREFETCH_GEMV=8"
ab_runs q4 ${ROUNDS:-2} -m $M/8b-q4_k_m.gguf -n 128; el
finish
