#!/bin/bash
# Session 16, call 2 (H200): where a decode step's time goes, by leaving
# kernels out (an experiment binary, not committed: LS_SKIP bits make a
# kernel return right after its PDL wait or skip one of its phases):
# 1 attention's position loop, 2 its output phase, 4 its RoPE + KV store,
# 8 the whole decode attention kernel, 16 rmsnorm, 32 swiglu, 64 the split
# merge (reduce) kernel. tok/s of the 8b Q4_K_M and the 70b Q4_K_M resident.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for r in 1 2; do for k in 0 8 72 1 2 4 64 16 32 0; do
  echo "8b skip=$k round $r: $(LS_SKIP=$k timeout 60 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
done; done 2>&1 | tee $O/8b.txt; el
for k in 0 72 1 64; do echo "8b 16k skip=$k: $(LS_SKIP=$k timeout 120 $L bench -m $M/8b.gguf --prompt-tokens 16000 -n 64 -c 16384 2>&1 | tail -1 | cut -d'|' -f2-3)"; done | tee $O/8b-16k.txt; el
rm -f $M/8b.gguf
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for k in 0 8 72 1 2 4 64 16 32 0; do
  echo "70b skip=$k: $(LS_SKIP=$k timeout 80 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
done 2>&1 | tee $O/70b.txt; el
date -u
