#!/bin/bash
# Final acceptance runs of issue 14: PARTS as given.
O=$OUT; B=/tmp/b; mkdir -p $B /tmp/llama
[ -x $B/layerstream ] || tar xzf .gpubin/bin.tgz -C $B
[ -x /tmp/llama/llama-batched-bench ] || tar xJf .llama/llama-bin.tar.xz -C /tmp/llama
date -u; nvidia-smi --query-gpu=name --format=csv,noheader
BIN=$B LLAMA=/tmp/llama OUT=$O STEPS=48 bash scripts/gpu_hybrid_default_check.sh 2>&1 | tee $O/log.txt
