#!/bin/bash
# Session 18, call 1 (H200). Two things in one call:
# 1. Session 17's call 4, never run: the GPU tests of the default decode
#    attention (16 splits of at least 8 positions up to 512) and a 70b decode
#    with default flags.
# 2. GEMV v9, the slab form (a block's rows one bulk copy into shared memory,
#    issued before the PDL wait): its tests, the graph-timed GEMVs, and A/B of
#    whole decodes, LS_GEMV_VERSION=9 against the default, interleaved.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 150 $B/ls_gpu_tests -tc="cuda ops: attention*,cuda kv paged*,decode fused*,cuda backend: logits*,cuda backend: a 300*,cuda matmul: gemv v9*,cuda matmul: gemv v5*" > $O/gpu-tests.txt 2>&1; echo "tests rc=$?"; grep -E "test cases|assertions|v9|FAILED|ERROR" $O/gpu-tests.txt | head -20; el
timeout 60 $B/ls_bench_matmul --graph > $O/graph-8b.txt 2>&1; grep -E "^bound|graph" $O/graph-8b.txt | sed 's/ v2 .*v7 /  v7 /' ; el
timeout 60 $B/ls_bench_matmul --graph 70b > $O/graph-70b.txt 2>&1; grep -E "graph" $O/graph-70b.txt | sed 's/ v2 .*v7 /  v7 /'; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for r in 1 2 3; do for v in 0 9; do
  echo "8b v=$v round $r: $(LS_GEMV_VERSION=$v timeout 60 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/8b.txt
done; done; el
rm -f $M/8b.gguf
timeout 90 $L synth -q -o $M/8bq8.gguf --preset 8b --quant q8_0; el
for r in 1 2; do for v in 0 9; do
  echo "8b q8_0 v=$v round $r: $(LS_GEMV_VERSION=$v timeout 60 $L decode -m $M/8bq8.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/8bq8.txt
done; done; el
rm -f $M/8bq8.gguf
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2; do for v in 0 9; do
  echo "70b v=$v round $r: $(LS_GEMV_VERSION=$v timeout 80 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/70b.txt
done; done; el
echo "70b default flags (no env): $(timeout 80 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/70b.txt
date -u
