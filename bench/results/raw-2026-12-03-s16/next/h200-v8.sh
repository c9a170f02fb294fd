#!/bin/bash
# Prepared in session 16 for the next session's first H200 call (unrun):
# the GEMV bench variant v8 (v7 with each warp's next tile prefetched into
# L2) against v7: its GPU tests, ls_bench_matmul --graph at the 8b and 70b
# shapes (v7 and v8 columns), then decode with LS_GEMV_VERSION=8 (v8 for
# every one-matrix launch) against the default, interleaved, 70b and 8b
# Q4_K_M. Expects .gpubin/bin.txz with layerstream, ls_gpu_tests and
# ls_bench_matmul built from the tree (strip, then XZ_OPT="-9 -T2" tar -cJf).
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 300 $B/ls_gpu_tests -tc="cuda matmul: gemv*,decode fused*" 2>&1 | tail -30 > $O/gpu-tests.txt; grep -E "test cases|assertions" $O/gpu-tests.txt; el
for s in "" 70b; do timeout 150 $B/ls_bench_matmul --graph $s 2>&1 | grep -E "^bound|graph x20" | tee -a $O/bench-graph.txt | tr '|' '\n' | grep -E "graph x20|^ v7 |^ v8 " ; done; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2 3; do for v in 0 8; do
  echo "70b gemv_version=$v round $r: $(LS_GEMV_VERSION=$v timeout 80 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
done; done 2>&1 | tee $O/70b.txt; el
rm -f $M/70b.gguf
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for r in 1 2 3; do for v in 0 8; do
  echo "8b gemv_version=$v round $r: $(LS_GEMV_VERSION=$v timeout 60 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
done; done 2>&1 | tee $O/8b.txt; el
date -u
