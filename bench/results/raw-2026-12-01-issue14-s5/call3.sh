#!/bin/bash
# Call 3 (session 5): llama.cpp -ngl 46 and layerstream's default plan after
# 1/256/1024/4096 tokens on the same 70b file; CPU attention alone.
O=$OUT; B=/tmp/b3; mkdir -p $B /tmp/llama
tar xJf .gpubin/bin3.txz -C $B
[ -x /tmp/llama/llama-batched-bench ] || tar xJf .llama/llama-bin.tar.xz -C /tmp/llama
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } | tee $O/log.txt
BIN=$B LLAMA=/tmp/llama OUT=$O STEPS=48 PARTS="llama prompts attn" \
  bash scripts/gpu_hybrid_default_check.sh 2>&1 | tee -a $O/log.txt
