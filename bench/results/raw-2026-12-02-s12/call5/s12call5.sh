#!/bin/bash
# Session 12, call 5: GEMV v7, the direct form of the int8 GEMV for Q4_K and
# Q5_K (no shared-memory stage, loads straight to registers, 4 blocks an
# SM): its GPU test, ls_bench_matmul --graph (each form as decode runs it,
# beside the D2D bound), and the 8b Q4_K_M decode A/B (LS_GEMV_VERSION=7).
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b12; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
date -u; nvidia-smi -L; rm -rf $B/*; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
(cd /tmp && timeout 120 $B/ls_gpu_tests -tc="cuda matmul: gemv v5*" 2>&1 | tail -6) | tee $O/gpu-gemv.txt
timeout 150 $B/ls_bench_matmul --graph 2>&1 | grep -E "bound|graph" | tee $O/bench-graph.txt
BIN=$B OUT=$O N=256 ROUNDS=2 SWITCHES="default LS_GEMV_VERSION=7" timeout 150 scripts/gpu_decode_ab.sh q4_k_m
date -u
cd $OUT && tar cJf l.txz l
