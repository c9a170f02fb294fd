#!/bin/bash
# Session 59, call 3: (1) the CPU attention at 1k-4k with the pool pinned one
# thread a CPU against not (--pin off,on, alternated in each run, four
# rounds; main's kernel: spans-attn.txz's bench with spans off is main's
# code plus the unused knob); (2) on an H200, session 57's call 4 (issue
# 20's H200 lines); on an H100, session 56's call 4 (the 8b beside
# llama.cpp, after 16k, the GEMVs alone).
# Run: OUT=$OUT bash bench/results/raw-2026-12-07-s59/call3/run.sh $PWD (timeout 560; carry
# .gpubin/spans-attn.txz, .gpubin/bin.txz (4a91a12), .gpubin/llama-bench.txz; model/weights/*.gguf
# moved aside)
set -u
R=$1
mkdir -p /tmp/sa && tar -xJf "$R/.gpubin/spans-attn.txz" -C /tmp/sa; A=/tmp/sa/ls_bench_cpu_attention_spans
mkdir -p $OUT/pin
for r in 1 2 3 4; do
  timeout 50 $A --ctx 1024,2048,4096 --reps 31 --pin off,on > $OUT/pin/pin-$r.txt 2>&1
  echo "pin round $r: host $(awk '/^ +16 /{print $2; exit}' $OUT/pin/pin-$r.txt): $(grep -E '^ +[0-9]+ +16 ' $OUT/pin/pin-$r.txt | awk '{printf "%s %s %s us %s; ", $1, $7, $10, $NF}')"
done
(cd $OUT && tar -czf pin.tgz pin && rm -rf pin)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  OUT=$OUT LIMIT=$((540 - SECONDS)) bash "$R/bench/results/raw-2026-12-07-s57/call4/run.sh" "$R"
else
  OUT=$OUT LIMIT=$((520 - SECONDS)) bash "$R/bench/results/raw-2026-12-07-s56/call4/run.sh" "$R"
fi
