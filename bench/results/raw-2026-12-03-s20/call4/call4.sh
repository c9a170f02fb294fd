#!/bin/bash
# Session 20, call 4 (H200): the planner sends each run of resident layers as
# one job (so the next step's graph is ready before the step begins). 8b
# Q4_K_M decode default beside LS_LAYER_GRAPH=0, rounds interleaved after a
# warm-up, and a trace of the default for the stall table; then the whole GPU
# suite.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
timeout 60 $L decode -m $M/8b.gguf -p Hello -n 64 --temp 0 > /dev/null 2>&1
for r in 1 2 3; do for e in LS_X=1 LS_LAYER_GRAPH=0; do
  echo "8b q4_k_m Hello $e r$r: $(env $e timeout 60 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/res.txt
done; done; el
for e in LS_X=1 LS_LAYER_GRAPH=0; do
  echo "8b q4_k_m prompt 1000 $e (prefill | decode): $(env $e timeout 90 $L bench -m $M/8b.gguf --prompt-tokens 1000 -n 64 -c 4096 2>&1 | tail -1 | cut -d'|' -f2-3)" | tee -a $O/res.txt
done
timeout 60 $L decode -m $M/8b.gguf -p Hello -n 64 --temp 0 --trace $O/trace-8b.json --stats > $O/stats-8b.txt 2>&1
tail -3 $O/stats-8b.txt; rm -f $M/8b.gguf; el
timeout 370 $B/ls_gpu_tests > $O/gpu-tests.txt 2>&1; echo "all GPU tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt | tail -2; grep -B5 -A15 "ERROR\|FAILED" $O/gpu-tests.txt | head -60; el
date -u
