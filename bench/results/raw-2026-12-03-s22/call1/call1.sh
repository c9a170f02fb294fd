#!/bin/bash
# Session 22, call 1 (H200): the GEMM path's f16 scratch cut from the output
# head (1.96 GiB on the 70b) to the largest layer weight, the head in slices
# of rows. The GPU suite; then the 70b at 24 GiB, the binary before
# (layerstream_old, session 21) beside the new one in the same call: the
# plan, batch-1 default decode, and bench --batch 1,8,32 (issue 17's shape).
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; tar -xJf .gpubin/bin.txz -C $B || exit 2
timeout 240 $B/ls_gpu_tests > $O/gpu-tests.txt 2>&1
echo "gpu tests rc=$?"; grep -E "test cases|assertions|slices" $O/gpu-tests.txt | head -5; grep -B3 -A12 "ERROR" $O/gpu-tests.txt | head -40; el
timeout 200 $B/layerstream synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
for v in old new; do
  L=$B/layerstream; [ $v = old ] && L=$B/layerstream_old
  timeout 100 $L decode -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB -p Hello -n 64 --temp 0 --no-display-prompt --stats > /dev/null 2> $O/hybrid-$v.txt
  echo "$v: $(rate < $O/hybrid-$v.txt)"; grep -E "tier plan:|dequantization|device slots|resident layers" $O/hybrid-$v.txt | head -4; el
done
for v in new old; do
  L=$B/layerstream; [ $v = old ] && L=$B/layerstream_old
  timeout 200 $L bench -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,32 --prompt-tokens 128 -n 48 -c 256 --stats > $O/batch-$v.txt 2>&1; echo "$v batch rc=$?"; grep -E "^\|" $O/batch-$v.txt | cut -d'|' -f1-5,15-20 | head -6; grep "CPU tier by width" $O/batch-$v.txt; el
done
date -u
