#!/bin/bash
# Session 20, call 3 (H200): the final tree. ls_bench_matmul --graph (Q8_0
# v5 = default, v53 = the shape before session 20, v51 one stage, v52 2 rows;
# the q|k|v launch's 6,144 rows as one shape); 8b Q8_0 decode default beside
# LS_GEMV_WAVES=0 (rounds interleaved, a warm-up first); the whole GPU suite.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 120 $B/ls_bench_matmul --graph > $O/bench-graph.txt 2>&1; grep -E "^bound|q8_0" $O/bench-graph.txt | head -6; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 90 $L synth -q -o $M/8b-q8.gguf --preset 8b --quant q8_0; el
timeout 60 $L decode -m $M/8b-q8.gguf -p Hello -n 64 --temp 0 > /dev/null 2>&1
for r in 1 2 3; do for w in x 0; do
  echo "8b Q8_0 Hello WAVES=$w r$r: $(LS_GEMV_WAVES=$w timeout 60 $L decode -m $M/8b-q8.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/res.txt
done; done; el
rm -f $M/8b-q8.gguf
timeout 420 $B/ls_gpu_tests > $O/gpu-tests.txt 2>&1; echo "all GPU tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt | tail -2; grep -B5 -A15 "ERROR\|FAILED" $O/gpu-tests.txt | head -60; el
date -u
