#!/bin/bash
# Session 17, call 4 (H200): the new default (16 attention splits of at
# least 8 positions up to 512): GPU tests of attention and decode, then 8b
# and 70b Q4_K_M decode with default flags, and the bound.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
date -u; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 60 $B/ls_gpu_tests -tc="cuda ops: attention*,cuda kv paged*,decode fused*,cuda backend: logits*,cuda backend: a 300*" 2>&1 | tail -30 > $O/gpu-tests.txt; grep -E "test cases|assertions" $O/gpu-tests.txt
timeout 30 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1 | tee $O/bound.txt
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 60 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m
for r in 1 2; do echo "70b default round $r: $(timeout 30 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/70b.txt; done
date -u
