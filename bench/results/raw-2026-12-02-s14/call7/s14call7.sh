#!/bin/bash
# Session 14, call 7 (H200): the final tree (launch_pdl through
# launch_pdl_cluster): the fused-kernel and backend GPU tests, one 8b decode.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
date -u; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 60 $B/ls_gpu_tests -tc="decode fused*,cuda backend: decode through CUDA graphs*,cuda backend: logits and 64*,*argmax*" 2>&1 | tail -8 > $O/gpu-tests.txt
grep -E "test cases|assertions|ERROR" $O/gpu-tests.txt | head
timeout 60 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m
for r in 1 2; do echo "8b q4_k_m round $r: $(timeout 40 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | grep -o 'generated [0-9]* tokens, [0-9.]* tok/s')"; done | tee $O/tg.txt
date -u
