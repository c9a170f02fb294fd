#!/bin/bash
# Session 51 call 1: session 50's call 4 cut to what decides early GEMV loads
# (LS_GEMV_EARLY=1) in the little device time left: the decode and backend
# tests with early loads, the 8b Q4_K_M against the plain form in alternated
# rounds, after 300 tokens, then the GEMV test and the graph bench if time
# is left. Binaries: .gpubin/bin.txz built at 8d7f62c (session 50's final
# kernels; later commits change no kernel).
# Run: OUT=$OUT LIMIT=190 bash bench/results/raw-2026-12-07-s51/call1/run.sh $PWD   (carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-190}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
timeout 60 $B/layerstream synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1; echo "synth 8b rc=$?"
(cd $R && LS_GEMV_EARLY=1 timeout 60 $B/ls_gpu_tests -tc="decode fused*,cuda backend*,*chained*,*graphs*" > $O/tests-early.txt 2>&1)
echo "decode/backend tests with early loads rc=$?"; grep -E "test cases|assertions|Status" $O/tests-early.txt | tail -3
grep -B2 -A12 "ERROR\|FAILED" $O/tests-early.txt | head -30; el; pack
AB="LS_X=1;LS_GEMV_EARLY=1"
ab_runs b8 2 -m $M/8b-q4_k_m.gguf -n 128; el; pack
left 40 && { ab_runs b8p300 1 -m $M/8b-q4_k_m.gguf --prompt-tokens 300 -n 48; el; pack; }
left 40 && { (cd $R && timeout 35 $B/ls_gpu_tests -tc="cuda matmul: gemv v5*" > $O/tests-gemv.txt 2>&1)
  echo "gemv test rc=$?"; grep -E "test cases|assertions|Status" $O/tests-gemv.txt | tail -3; el; pack; }
left 35 && { ab_runs b8r3 1 -m $M/8b-q4_k_m.gguf -n 128; el; pack; }
left 35 && { timeout 30 $B/ls_bench_matmul --graph > $O/graph8b.txt 2>&1
  grep -E "bound|graph x20" $O/graph8b.txt | grep -o "^.*: \|v7 [^|]*|\|v7e[^|]*|" | paste -sd' ' | sed 's/  graph/\n  graph/g' | head -14; el; }
finish
