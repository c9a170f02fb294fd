#!/bin/bash
# Session 22, call 2 (H200): after the scratch change (call 1), the matmul
# GPU tests again (their generator now seeded fixed); issue 17's widths
# 1, 8, 16, 32, 64 on the 70b at 24 GiB; issue 14's default-flag decode after
# prompts of 1, 1024 and 4096 tokens, and a fixed --cpu-layers sweep at 4096
# if time is left.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
t0=$(date +%s); el() { echo "--- $(date -u +%T) [$(($(date +%s) - t0)) s]"; }
date -u; tar -xJf .gpubin/bin.txz -C $B || exit 2
timeout 120 $B/ls_gpu_tests -tc="cuda matmul*" > $O/gpu-tests-matmul.txt 2>&1
echo "gpu matmul tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests-matmul.txt | head -3; grep -B3 -A8 "ERROR" $O/gpu-tests-matmul.txt | head -30; el
L=$B/layerstream; F=$M/70b-q4km.gguf
timeout 200 $L synth -q -o $F --preset 70b --quant q4_k_m; el
timeout 240 $L bench -m $F --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,16,32,64 --prompt-tokens 128 -n 32 -c 256 --stats > $O/batch.txt 2>&1; echo "batch rc=$?"; grep -E "^\|" $O/batch.txt | cut -d'|' -f1-5,15-20; grep "CPU tier by width" $O/batch.txt; el
for p in 1 1024 4096; do
  echo "== default flags after a $p-token prompt"
  timeout 90 $L bench -m $F --vram-budget 24GiB --ram-budget 48GiB -c 4608 -n 32 --prompt-tokens $p > $O/prompt-$p.txt 2>&1
  grep -E "tier plan|^\| [0-9a-z]|error" $O/prompt-$p.txt | cut -c1-200; el
done
if [ $(($(date +%s) - t0)) -lt 430 ]; then
  echo "== sweep of fixed --cpu-layers after a 4096-token prompt"
  timeout 150 $L bench -m $F --vram-budget 24GiB --ram-budget 48GiB -c 4608 -n 32 --prompt-tokens 4096 --sweep cpu=22,25,28 > $O/sweep-4096.txt 2>&1
  grep -E "^\| [0-9a-z]|error" $O/sweep-4096.txt | cut -c1-200; el
fi
date -u
