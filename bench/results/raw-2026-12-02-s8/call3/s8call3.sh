#!/bin/bash
# Session 8, call 3: 70b at 24 GiB, widths 1-64 with 128-token prompts and a
# context sized for them (-c 256), width 32 with 128 new tokens each; the 1b
# CPU-only prefill of 512 tokens with and without the AMX GEMM.
set -u
O=$OUT; M=/tmp/m8; B=/tmp/b8; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; tar -xJf .gpubin/s8bin3.txz -C $B || exit 2
L=$B/layerstream
timeout 60 $L synth -q -o $M/1b.gguf --preset 1b --quant q4_k_m
for r in 1 2; do for a in 1 0; do
  LS_CPU_AMX=$a timeout 60 $L bench -m $M/1b.gguf --backend cpu --prompt-tokens 512 -n 4 > $O/1b-amx$a-r$r.txt 2>&1
  echo "1b cpu amx=$a round $r: $(grep -E "^\|" $O/1b-amx$a-r$r.txt | tail -1)"; done; done; el
[ -f $M/70b.gguf ] || timeout 60 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
timeout 100 $L bench -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB --batch 32 --prompt-tokens 128 -n 128 -c 256 --stats --json $O/bench-70b-w32.json > $O/bench-70b-w32.txt 2>&1
echo "rc=$?"; grep -E "^\||CPU tier by|tier plan|error" $O/bench-70b-w32.txt | head; el
timeout 200 $L bench -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,16,32,64 --prompt-tokens 128 -n 48 -c 256 --stats --json $O/bench-70b-batch.json > $O/bench-70b-batch.txt 2>&1
echo "rc=$?"; grep -E "^\||CPU tier by|tier plan|error" $O/bench-70b-batch.txt | head -20; el
