#!/bin/bash
# Session 28, call 2: issue 14's engine line after a 4096-token prompt,
# layerstream (default flags) beside llama.cpp (c392e50's llama-batched-bench,
# built in call 1 on this kind of machine, carried as .gpubin/llbb.xz; -ngl 46)
# on the same file in the same call; then the sweep line: fixed --cpu-layers
# against auto (the default: calibration at load, re-planned with 4-step
# windows) in one sweep, after 4096 and 1 prompt tokens. llama.cpp's first
# row (1 token) is a warm-up.
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M /tmp/ll
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
xz -dc $R/.gpubin/llbb.xz > /tmp/ll/llama-batched-bench && chmod +x /tmp/ll/llama-batched-bench || exit 2
timeout 250 $B/layerstream synth -q -o $M/70b-q4km.gguf --preset 70b --quant q4_k_m; echo "synth rc=$?"; el
echo "== llama.cpp: llama-batched-bench -ngl 46 -c 4608 -npp 1,4096 -ntg 16 -npl 1"
timeout 260 /tmp/ll/llama-batched-bench -m $M/70b-q4km.gguf -ngl 46 -c 4608 -npp 1,4096 -ntg 16 -npl 1 > $O/llama.txt 2>&1
echo "llama rc=$?"; grep -E "^\|" $O/llama.txt; el
cd $R
BIN=$B OUT=$O/check MODELS=$M PARTS="prompts sweep" PROMPTS="4096" SWEEP="auto,24,26,28" \
  SWEEP_PROMPTS="4096 1" timeout 330 bash scripts/gpu_hybrid_default_check.sh > $O/check.txt 2>&1
echo "check rc=$?"; cat $O/check.txt | cut -c1-500; el
