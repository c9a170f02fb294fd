#!/bin/bash
# Session 57, call 3 (any machine): call 2 found the attention row kernel
# 5.5 us a layer of the 8b's step and each norm 2.1 (left out in the graph).
# Do smaller blocks of them, which fit beside the draining GEMV sooner, cost
# less there?
# (1) the GPU tests of the norms with LS_NORM_THREADS=256 and 512 (new);
# (2) the 8b Q4_K_M, `bench -n 128`, alternated, two rounds: the default,
#     LS_NORM_THREADS=256, 512, LS_ATTENTION_ROW_GROUPS=1, 2 (the row
#     kernel's 128 and 256 threads for 512), LS_ATTENTION_ROW=0 (the splits);
# (3) the same after a 300-token prompt (-n 64: rows of 384).
# Run: OUT=$OUT LIMIT=300 bash bench/results/raw-2026-12-07-s57/call3/run.sh $PWD (timeout 330;
# carry .gpubin/bin.txz, model/weights/*.gguf moved aside)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-300}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
( timeout 120 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1; echo "synth rc=$?" ) &
SY=$!
for t in 256 512; do
  LS_NORM_THREADS=$t timeout 60 $B/ls_gpu_tests -tc="*rmsnorm*" > $O/test-norm-$t.txt 2>&1
  echo "norm tests, $t threads: rc=$? $(grep -E '^\[doctest\] (test cases|assertions)' $O/test-norm-$t.txt | tr '\n' ' ')"
done
wait $SY; el
AB="LS_X=0;LS_NORM_THREADS=256;LS_NORM_THREADS=512;LS_ATTENTION_ROW_GROUPS=1;LS_ATTENTION_ROW_GROUPS=2;LS_ATTENTION_ROW=0"
for r in 1 2; do
  left 60 || break
  ab_runs s$r 1 -m $M/8b-q4_k_m.gguf -n 128
done
el; pack
for r in 1 2; do
  left 50 || break
  ab_runs p$r 1 -m $M/8b-q4_k_m.gguf --prompt-tokens 300 -n 64
done
el; finish
