#!/bin/bash
# Session 50 call 4: early loads as a kernel of their own (the plain direct
# GEMV unchanged from before the session): the GEMV test and the decode and
# backend tests with LS_GEMV_EARLY=1, ls_bench_matmul --graph (v7 / v7e),
# the 8b Q4_K_M against the plain form in alternated rounds, after 300 and
# 16,000 tokens, and, if time is left, the 70b Q4_K_M fully resident.
# Run: OUT=$OUT LIMIT=420 bash bench/results/raw-2026-12-06-s50/call4/run.sh $PWD   (timeout 440; LIMIT 150 at least: the 16k and 70b runs are skipped where time is short)
# (carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-420}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
F=$M/70b-q4km.gguf
timeout 120 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1; echo "synth 8b rc=$?"
(cd $R && timeout 100 $B/ls_gpu_tests -tc="cuda matmul: gemv v5*" > $O/tests-gemv.txt 2>&1)
echo "gemv test rc=$?"; grep -E "test cases|assertions|Status" $O/tests-gemv.txt | tail -3
grep -B2 -A12 "ERROR\|FAILED" $O/tests-gemv.txt | head -40
(cd $R && LS_GEMV_EARLY=1 timeout 120 $B/ls_gpu_tests -tc="decode fused*,cuda backend*,*chained*,*graphs*" > $O/tests-early.txt 2>&1)
echo "decode/backend tests with early loads rc=$?"; grep -E "test cases|assertions|Status" $O/tests-early.txt | tail -3
grep -B2 -A12 "ERROR\|FAILED" $O/tests-early.txt | head -40; el; pack
timeout 60 $B/ls_bench_matmul --graph > $O/graph8b.txt 2>&1
grep -E "bound|graph x20" $O/graph8b.txt | sed 's/ v2 [^|]*|//; s/ v5 [^|]*|//; s/ v6 [^|]*|//; s/ v62 [^|]*|//; s/ v68 [^|]*|//; s/ v72 [^|]*|//; s/ v71 [^|]*|//' | cut -c1-300 | head -12
el; pack
AB="LS_X=1;LS_GEMV_EARLY=1"
ab_runs b8 3 -m $M/8b-q4_k_m.gguf -n 128; el; pack
ab_runs b8p300 1 -m $M/8b-q4_k_m.gguf --prompt-tokens 300 -n 48; el; pack
if left 100; then
  ab_runs b8-16k 1 -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384; el; pack
fi
if left 110; then
  timeout $((LIMIT - SECONDS - 60)) $L synth -q -o $F --preset 70b --quant q4_k_m > $O/synth70.txt 2>&1; echo "synth 70b rc=$?"; el
  left 60 && ab_runs b70 1 -m $F -n 48; el
fi
finish
