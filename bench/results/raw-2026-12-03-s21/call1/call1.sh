#!/bin/bash
# Session 21, call 1 (H200): session 20's code not yet run on a device.
# The pairs tile's memcmp test (AVX-512 VNNI + DQ) and its speed at 8-32
# tokens beside the default tile; the GPU tests of the GEMV and pipeline
# (the occupancy cache fold); bench's device-memory bound line on the 8b;
# the 8b after 16,000 tokens with one graph a step.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; lscpu | grep -E "Model name|^CPU\(s\)|MHz"; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 120 $B/ls_unit_tests -tc="cpu_gemm_q8*" > $O/unit-gemm.txt 2>&1
echo "cpu_gemm_q8 rc=$?"; grep -E "test cases|assertions|SKIPPED" $O/unit-gemm.txt | head -5; grep -B3 -A12 "ERROR" $O/unit-gemm.txt | head -40; el
for r in 1 2; do for p in 0 1; do
  echo "== pairs $p r$r"; LS_GEMM_PAIRS=$p timeout 120 $B/ls_bench_cpu_matmul --threads 16 --ntok 8,16,32 --types q4_k,q6_k --act q8 --path gemm --amx off --shapes 70b --reps 5
done; done > $O/cpu-matmul-pairs.txt 2>&1; el
grep -E "GB/s|host|q4_k|q6_k" $O/cpu-matmul-pairs.txt | head -60
timeout 240 $B/ls_gpu_tests -tc="cuda matmul*,decode fused*,cuda pipeline*" > $O/gpu-tests.txt 2>&1
echo "GPU tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt | tail -2; grep -B5 -A15 "ERROR\|FAILED" $O/gpu-tests.txt | head -40; el
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1 | tee $O/bound.txt
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
timeout 60 $L bench -m $M/8b.gguf -n 128 > $O/bench-8b.txt 2>&1; cat $O/bench-8b.txt | tail -12
for r in 1 2; do
  timeout 120 $L bench -m $M/8b.gguf --prompt-tokens 16000 -n 64 -c 16384 > $O/bench-8b-16k-r$r.txt 2>&1; tail -6 $O/bench-8b-16k-r$r.txt
done; el
date -u
