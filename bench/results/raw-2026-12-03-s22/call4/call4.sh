#!/bin/bash
# Session 22, call 4 (H200, the session's last 5 minutes of device time): the
# GEMM path of widths 9-64 with each weight's f16 form in L2-sized slices
# (LS_GEMM_L2_SLICE_MB=16, 32) against whole weights (0, the default), the
# synthetic 8b Q4_K_M resident, bench --batch 16,32,64, two rounds alternated.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
t0=$(date +%s); el() { echo "--- $(date -u +%T) [$(($(date +%s) - t0)) s]"; }
tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream; F=$M/8b.gguf
timeout 90 $L synth -q -o $F --preset 8b --quant q4_k_m; el
for r in 1 2; do for v in 0 16 32; do
  [ $(($(date +%s) - t0)) -gt 170 ] && break 2
  LS_GEMM_L2_SLICE_MB=$v timeout 40 $L bench -m $F --batch 16,32,64 --prompt-tokens 32 -n 32 -c 128 > $O/b-$v-r$r.txt 2>&1
  echo "slice $v r$r: $(grep -E '^\| [0-9]' $O/b-$v-r$r.txt | cut -d'|' -f2,5 | tr '\n' ' ')"
done; done; el
