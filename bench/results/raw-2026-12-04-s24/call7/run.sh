#!/bin/bash
# Session 24, call 7: GPU tests owed by session 23 (the matmul cases after
# its refactor, and the hybrid-plans streaming case never run), the CPU
# tests with the chunk form now the default on this AMX machine; then the
# 70b at 24 GiB, bench --batch 1,8,16,32 with default flags (chunks) and with
# LS_CPU_Q8_FORM=lanes, in the same call.
set -u
R=$1; O=$OUT; M=/tmp/ls-models; B=/tmp/b; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
timeout 60 $B/ls_unit_tests -tc="cpu_*,*batch*,*speculative*" > $O/unit.txt 2>&1
echo "unit rc=$?"; grep -E "test cases" $O/unit.txt; grep -B4 -A8 "ERROR" $O/unit.txt | head -20; el
timeout 200 $B/ls_gpu_tests -tc="cuda matmul*,cuda streaming: hybrid plans*" > $O/gpu.txt 2>&1
echo "gpu rc=$?"; grep -E "test cases|assertions" $O/gpu.txt; grep -B4 -A10 "ERROR" $O/gpu.txt | head -30; el
timeout 150 $B/layerstream synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for v in default lanes; do
  E=""; [ $v = lanes ] && E="LS_CPU_Q8_FORM=lanes"
  env $E timeout 120 $B/layerstream bench -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,16,32 --prompt-tokens 128 -n 32 -c 256 --stats > $O/batch70-$v.txt 2>&1
  echo "70b $v rc=$?"; grep -E "^\|" $O/batch70-$v.txt | cut -d'|' -f1-5,15-20 | head -7; grep -E "CPU tier by width" $O/batch70-$v.txt; el
done
