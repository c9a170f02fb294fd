#!/bin/bash
# Session 17, call 1 (H200). Two changes, each with its A/B switch:
# - decode attention stages a short split's K and V rows in shared memory
#   before the PDL wait (LS_ATTENTION_STAGE=0: the session-16 form);
# - the short kernels of a decode layer (attention, the norms, SwiGLU) ask
#   the next GEMV's weights into L2 while they run (kernels/l2_prefetch.cuh;
#   LS_L2_PF=attention,norm,swiglu MB caps[,early]; the binary's default: off).
# GPU tests of the paths touched; the bound; 8b Q4_K_M decode over the
# settings and GEMV v8, interleaved; 70b Q4_K_M resident for four settings.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 150 $B/ls_gpu_tests -tc="cuda ops: swiglu,cuda ops: rmsnorm*,cuda ops: attention*,cuda ops: argmax*,cuda kv paged*,decode fused*,cuda backend: logits*,cuda backend: a 300*" 2>&1 | tail -30 > $O/gpu-tests.txt; grep -E "test cases|assertions" $O/gpu-tests.txt; el
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1 | tee $O/bound.txt; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
declare -A E=([old]="LS_ATTENTION_STAGE=0 LS_L2_PF=0,0,0" [stage]="LS_L2_PF=0,0,0" [pf64-8-8]="LS_L2_PF=64,8,8"
  [pf64-0-0]="LS_L2_PF=64,0,0" [pf0-8-0]="LS_L2_PF=0,8,0" [pf0-0-8]="LS_L2_PF=0,0,8" [pf64-16-16]="LS_L2_PF=64,16,16"
  [pf64-8-8-early]="LS_L2_PF=64,8,8,1" [v8]="LS_GEMV_VERSION=8 LS_L2_PF=0,0,0")
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for r in 1 2; do for k in old stage pf64-8-8 pf64-0-0 pf0-8-0 pf0-0-8 pf64-16-16 pf64-8-8-early v8; do
  echo "8b $k round $r: $(env ${E[$k]} timeout 60 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/8b.txt
done; done; el
rm -f $M/8b.gguf
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2; do for k in old stage pf64-8-8 pf64-16-16; do
  echo "70b $k round $r: $(env ${E[$k]} timeout 80 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/70b.txt
done; done; el
date -u
