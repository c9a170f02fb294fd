#!/bin/bash
# Session 20, call 5 (H200): the 70b Q4_K_M with one graph for each run of
# resident layers beside LS_LAYER_GRAPH=0: fully resident (issue 20's 70b
# line) and the hybrid plan at --vram-budget 24GiB --ram-budget 48GiB.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1 | tee $O/bound.txt
timeout 200 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2; do for e in LS_X=1 LS_LAYER_GRAPH=0; do
  echo "70b resident Hello $e r$r: $(env $e timeout 90 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/res.txt
done; done; el
for e in LS_X=1 LS_LAYER_GRAPH=0; do
  echo "70b 24GiB Hello $e: $(env $e timeout 100 $L decode -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB -p Hello -n 48 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/res.txt
done; el
date -u
