#!/bin/bash
# Session 14, call 6 (H200): L2 prefetch of the next GEMV's weights by
# extra blocks of the norm and SwiGLU kernels (LS_L2_PREFETCH_MB; 0 = off),
# A/B in the same call; GPU tests of the kernels it touches first.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 150 $B/ls_gpu_tests -tc="decode fused*,cuda backend*,*rmsnorm*,*swiglu*" 2>&1 | tail -30 > $O/gpu-tests.txt; el
grep -E "test cases|assertions|ERROR|FAILED" $O/gpu-tests.txt | head -20
for q in q4_k_m q8_0; do timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q; done; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | grep -o "[0-9.]* tok/s"; }
for r in 1 2; do for mb in 0 16 32; do
  echo "8b q4_k_m prefetch=${mb}MB round $r: $(LS_L2_PREFETCH_MB=$mb timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
done; done 2>&1 | tee $O/tg.txt
for r in 1 2; do for mb in 0 16; do
  echo "8b q8_0 prefetch=${mb}MB round $r: $(LS_L2_PREFETCH_MB=$mb timeout 60 $L decode -m $M/8b-q8_0.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
done; done 2>&1 | tee -a $O/tg.txt; el
for mb in 0 16; do echo "16k prefetch=${mb}MB: $(LS_L2_PREFETCH_MB=$mb timeout 120 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 2>&1 | tail -1 | cut -d'|' -f2-3)"; done | tee $O/ctx.txt; el
rm -f $M/8b-*.gguf
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2; do for mb in 0 16; do echo "70b prefetch=${mb}MB round $r: $(LS_L2_PREFETCH_MB=$mb timeout 80 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"; done; done | tee $O/70b.txt; el
date -u
