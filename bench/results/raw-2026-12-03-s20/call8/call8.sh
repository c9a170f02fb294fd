#!/bin/bash
# Session 20, call 8 (H200): the 8b Q4_K_M after 16,000 tokens with one graph
# a step (default) beside LS_LAYER_GRAPH=0, and the D2D bound of the call.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
tar -xJf .gpubin/bin.txz -C $B layerstream ls_bench_matmul || exit 2
L=$B/layerstream
timeout 20 $B/ls_bench_matmul --graph 2>&1 | grep -m1 -E "^bound" | tee $O/bound.txt
timeout 60 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m
for e in LS_X=1 LS_LAYER_GRAPH=0; do
  echo "8b prompt 16000 $e (prefill | decode): $(env $e timeout 60 $L bench -m $M/8b.gguf --prompt-tokens 16000 -n 64 -c 16384 2>&1 | tail -1 | cut -d'|' -f2-3)" | tee -a $O/res.txt
done
date -u
