#!/bin/bash
# Session 56, call 3: SwiGLU in the gate|up GEMV's epilogue (GemvQ8Params::glu,
# LS_GEMV_GLU=1; off by default until measured: the SwiGLU kernel).
# (1) the GPU tests it touches, with LS_GEMV_GLU=1: the epilogue against the kernel bit for bit,
#     the fused decode, graphs, the backend, the batch pipeline;
# (2) the 8b Q4_K_M, `bench -n 128`: LS_GEMV_GLU=1 against the default,
#     alternated, three rounds; Q8_0 two; after a 16k prompt one each;
#     width 4 (`bench --parallel 4`) one each.
# Run: OUT=$OUT LIMIT=300 bash bench/results/raw-2026-12-07-s56/call3/run.sh $PWD (timeout 330;
# carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-300}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
( for q in q4_k_m q8_0; do
    timeout 120 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q > $O/synth-$q.txt 2>&1; echo "synth $q rc=$?"
  done ) &
SY=$!
LS_GEMV_GLU=1 timeout 150 $B/ls_gpu_tests -tc="*SwiGLU*,decode fused*,*graphs*,*chained*,cuda backend*,*pipeline batch*" \
  > $O/tests.txt 2>&1
echo "gpu tests rc=$?"; grep -E "test cases|assertions|ERROR|FAILED" $O/tests.txt | head -12; wait $SY; el; pack
AB="LS_GEMV_GLU=1;LS_GEMV_GLU=0"
ab_runs q4 3 -m $M/8b-q4_k_m.gguf -n 128; el; pack
ab_runs q8 2 -m $M/8b-q8_0.gguf -n 128; el
for e in "LS_GEMV_GLU=1" "LS_GEMV_GLU=0"; do
  left 60 || break
  env $e timeout 100 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 > $O/b16k-$e.txt 2>&1
  echo "after 16k, $e: $(rate $O/b16k-$e.txt)"
done; el
grep -q -- "--parallel" <($L bench --help 2>&1) && for e in "LS_GEMV_GLU=1" "LS_GEMV_GLU=0"; do
  left 40 || break
  env $e timeout 60 $L bench -m $M/8b-q4_k_m.gguf -n 64 --parallel 4 > $O/bp4-$e.txt 2>&1
  echo "width 4, $e: $(grep -E '^\| [0-9]' $O/bp4-$e.txt | tail -1 | cut -c1-80)"
done; el
finish
