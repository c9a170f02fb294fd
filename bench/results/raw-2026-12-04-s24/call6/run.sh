#!/bin/bash
# Session 24, call 6: the chunk form in the engine. Synthetic 70b Q4_K_M at
# 24 GiB, bench --batch 1,8,32 (issue 17's shape) with the lane form and with
# LS_CPU_Q8_FORM=chunks, in the same call.
set -u
R=$1; O=$OUT; M=/tmp/ls-models; B=/tmp/b; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
timeout 200 $B/layerstream synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for v in chunks lanes; do
  timeout 190 env LS_CPU_Q8_FORM=$v $B/layerstream bench -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,32 --prompt-tokens 128 -n 32 -c 256 --stats > $O/batch70-$v.txt 2>&1
  echo "70b $v rc=$?"; grep -E "^\|" $O/batch70-$v.txt | cut -d'|' -f1-5,15-20 | head -6; grep -E "CPU tier by width|host read" $O/batch70-$v.txt; el
done
