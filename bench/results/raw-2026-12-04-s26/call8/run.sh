#!/bin/bash
# Session 26, call 8: call 7's machine, still warm (its 70b Q4_K_M and
# llama.cpp build in /tmp): the rest of issue 14's engine lines.
# llama-batched-bench -ngl 46 after 256 and 4096 tokens; layerstream after
# 256; the sweep of fixed --cpu-layers against the default after 1 and 4096;
# decode -f of a real 1k text; a five-turn chat.
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models
el() { echo "--- $(date -u +%T)"; }
ls -la $M /tmp/ll/b/bin/llama-batched-bench || exit 2
cd $R
BIN=$B OUT=$O/check MODELS=$M PARTS="prompts sweep text chat" PROMPTS="256" CHAT_N=60 timeout 330 \
  bash scripts/gpu_hybrid_default_check.sh > $O/check.txt 2>&1
echo "check rc=$?"; grep -E "==|^\| [0-9a-z]|\[|turn|layerstream: prompt|error" $O/check.txt; el
echo "== llama.cpp: llama-batched-bench -ngl 46 -npp 256,4096 -ntg 16 -npl 1"
timeout 240 /tmp/ll/b/bin/llama-batched-bench -m $M/70b-q4km.gguf -ngl 46 -c 4608 -npp 256,4096 -ntg 16 -npl 1 2>&1 | grep -E "^\|"; el
