#!/bin/bash
# Session 16, call 4 (H200): the tree as committed (decode attention with the
# split dot for short sub-ranges, L2 prefetch of short splits before the PDL
# wait, the output loop unrolled; q|k|v in one GEMV launch when v is Q5_K;
# the Q6_K GEMV with unsigned quants) beside the session-15 binary (old):
# GPU tests of the paths touched, then 8b Q4_K_M decode (short and after a
# 4k prompt) and 70b Q4_K_M resident decode, interleaved; the bound.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 200 $B/ls_gpu_tests -tc="cuda ops: attention*,cuda kv paged*,decode fused*,cuda backend*,cuda matmul: gemv*" 2>&1 | tail -30 > $O/gpu-tests.txt; grep -E "test cases|assertions" $O/gpu-tests.txt; el
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1 | tee $O/bound.txt; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2 3; do for v in _old ""; do
  echo "70b layerstream$v round $r: $(timeout 80 $L$v decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
done; done 2>&1 | tee $O/70b.txt; el
rm -f $M/70b.gguf
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for r in 1 2 3; do for v in _old ""; do
  echo "8b layerstream$v round $r: $(timeout 60 $L$v decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
done; done 2>&1 | tee $O/8b.txt; el
for r in 1 2; do for v in _old ""; do echo "8b 4k layerstream$v round $r: $(timeout 120 $L$v bench -m $M/8b.gguf --prompt-tokens 4000 -n 64 -c 4096 2>&1 | tail -1 | cut -d'|' -f2-3)"; done; done | tee $O/8b-4k.txt; el
date -u
