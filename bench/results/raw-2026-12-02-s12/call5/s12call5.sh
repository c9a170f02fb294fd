#!/bin/bash
# Session 12, call 5: GEMV v7, the direct form of the int8 GEMV for the
# K-quants (no shared-memory stage, loads straight to registers, 4 blocks an
# SM), and the GEMV without its 128-byte local-memory copy of the parameters
# (old/: the binary of efd678d, before that fix). Its GPU test,
# ls_bench_matmul --graph (each form as decode runs it, beside the D2D
# bound), and the 8b Q4_K_M decode: default, LS_GEMV_VERSION=7, old binary.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b12; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
date -u; nvidia-smi -L; rm -rf $B/*; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
(cd /tmp && timeout 150 $B/ls_gpu_tests -tc="cuda matmul: gemv v5*" 2>&1 | tail -6) | tee $O/gpu-gemv.txt
timeout 150 $B/ls_bench_matmul --graph 2>&1 | grep -E "bound|graph" | tee $O/bench-graph.txt
[ -f $M/8b-q4_k_m.gguf ] || timeout 90 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | grep -o "[0-9.]* tok/s"; }
for r in 1 2 3; do
  echo "round $r default: $(timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
  echo "round $r LS_GEMV_VERSION=7: $(LS_GEMV_VERSION=7 timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
  echo "round $r old binary: $(timeout 60 $B/old/layerstream decode -m $M/8b-q4_k_m.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
done | tee $O/ab.txt
date -u
cd $OUT && tar cJf l.txz l
