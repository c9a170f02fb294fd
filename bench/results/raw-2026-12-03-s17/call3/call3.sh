#!/bin/bash
# Session 17, call 3 (H200): more, shorter attention splits at short
# contexts. ncu (call 2) found the 70b's decode attention at ~130 positions
# bound by one warp a scheduler walking ~2,200 dependent instructions (40 of
# its 64 blocks have work: splits of at least 32 positions). A/B of
# LS_ATTENTION_SHORT=splits,min_chunk (for rows up to 512 positions)
# against the default (8 splits of at least 32), 8b and 70b Q4_K_M.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1 | tee $O/bound.txt; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for r in 1 2; do for k in 8,32 16,16 16,8 32,8; do
  echo "8b short=$k round $r: $(LS_ATTENTION_SHORT=$k timeout 60 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/8b.txt
done; done; el
rm -f $M/8b.gguf
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2; do for k in 8,32 16,16 16,8 32,8; do
  echo "70b short=$k round $r: $(LS_ATTENTION_SHORT=$k timeout 80 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/70b.txt
done; done; el
date -u
