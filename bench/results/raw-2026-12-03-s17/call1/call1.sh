#!/bin/bash
# Session 17, call 1 (H200): the short kernels of a decode layer (attention,
# the norms, SwiGLU) ask the next GEMV's weights into L2 while they run
# (kernels/l2_prefetch.cuh; LS_L2_PF=attention,norm,swiglu MB caps[,early]).
# GPU tests of the paths touched; then 8b Q4_K_M decode over the prefetch
# settings and GEMV v8 (LS_GEMV_VERSION=8), interleaved; then 70b Q4_K_M
# resident for the off / default / best-guess settings; the bound.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 150 $B/ls_gpu_tests -tc="cuda ops: swiglu,cuda ops: rmsnorm*,cuda ops: attention*,decode fused*,cuda backend: logits*,cuda backend: a 300*" 2>&1 | tail -30 > $O/gpu-tests.txt; grep -E "test cases|assertions" $O/gpu-tests.txt; el
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1 | tee $O/bound.txt; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for r in 1 2; do for pf in 0,0,0 64,8,8 64,0,0 0,8,0 0,0,8 64,16,16 64,8,8,1 64,2,2 v8; do
  if [ $pf = v8 ]; then e="LS_GEMV_VERSION=8"; else e="LS_L2_PF=$pf"; fi
  echo "8b $e round $r: $(env $e timeout 60 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
done; done 2>&1 | tee $O/8b.txt; el
for r in 1; do for pf in 0,0,0 64,8,8; do
  echo "8b 4k LS_L2_PF=$pf round $r: $(LS_L2_PF=$pf timeout 120 $L bench -m $M/8b.gguf --prompt-tokens 4000 -n 64 -c 4096 2>&1 | tail -1 | cut -d'|' -f2-3)"
done; done 2>&1 | tee $O/8b-4k.txt; el
rm -f $M/8b.gguf
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2 3; do for pf in 0,0,0 64,8,8 32,16,16; do
  echo "70b LS_L2_PF=$pf round $r: $(LS_L2_PF=$pf timeout 80 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
done; done 2>&1 | tee $O/70b.txt; el
date -u
