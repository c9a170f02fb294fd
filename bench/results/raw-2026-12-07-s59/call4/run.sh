#!/bin/bash
# Session 59, call 4: issue 20's H200 lines (session 57's call 4) if the
# machine that comes is an H200; on any other, nothing (its H100 figures
# are call 3's).
# Run: OUT=$OUT bash bench/results/raw-2026-12-07-s59/call4/run.sh $PWD (timeout 320; carry
# .gpubin/bin.txz (4a91a12), .gpubin/llama-bench.txz; model/weights/*.gguf moved aside)
set -u
R=$1
G=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$G"
echo "$G" | grep -q H200 || { echo "not an H200: nothing to run"; exit 0; }
OUT=$OUT LIMIT=${LIMIT:-280} bash "$R/bench/results/raw-2026-12-07-s57/call4/run.sh" "$R"
