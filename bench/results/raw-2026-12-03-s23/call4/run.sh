#!/bin/bash
# Session 23, call 4: the int8 GEMM in the engine (widths 9-64, routed by
# mmq_auto_max_tok). GPU tests (matmul, shared x, batched pipelines); then the
# 70b Q4_K_M at 24 GiB, bench --batch 1,8,16,32,64 with the default and with
# LS_MMQ=0 (the f16 GEMM) in the same call; then the 8b resident the same way.
set -u
R=$1; O=$OUT; M=/tmp/ls-models; B=/tmp/b; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
timeout 150 $B/ls_gpu_tests -tc="cuda matmul*,cuda pipeline batch*,*shared_x*,*batch*" > $O/gpu-tests.txt 2>&1
echo "gpu tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt; grep -B3 -A10 "ERROR" $O/gpu-tests.txt | head -30; el
timeout 200 $B/layerstream synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for v in mmq f16; do
  E=""; [ $v = f16 ] && E="LS_MMQ=0"
  env $E timeout 170 $B/layerstream bench -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,16,32,64 --prompt-tokens 128 -n 32 -c 256 --stats > $O/batch70-$v.txt 2>&1
  echo "70b $v rc=$?"; grep -E "^\|" $O/batch70-$v.txt | cut -d'|' -f1-5,15-20 | head -8; grep "CPU tier by width" $O/batch70-$v.txt; el
done
rm -f $M/70b.gguf
timeout 100 $B/layerstream synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for v in mmq f16; do
  E=""; [ $v = f16 ] && E="LS_MMQ=0"
  env $E timeout 80 $B/layerstream bench -m $M/8b.gguf --batch 8,16,32,64 --prompt-tokens 128 -n 32 -c 256 > $O/batch8-$v.txt 2>&1
  echo "8b $v rc=$?"; grep -E "^\|" $O/batch8-$v.txt | cut -d'|' -f1-5,15-20 | head -7; el
done
