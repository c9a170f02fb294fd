#!/bin/bash
# Session 11, call 8: why decode's "generated" rate sits below the trace's
# warm step period: the 8b Q4_K_M rate at 32, 128, 256, 512 tokens, and a
# 256-token trace (step period against position).
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b11; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 90 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m
for n in 32 128 256 512 32 128 256 512; do
  echo "n=$n: $(timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n $n --temp 0 --no-display-prompt 2>&1 >/dev/null | grep -o 'generated.*tok/s')"
done
timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 256 --temp 0 --no-display-prompt --trace $O/trace-256.json 2>&1 >/dev/null | grep -o 'generated.*tok/s'
xz -T4 $O/trace-256.json
