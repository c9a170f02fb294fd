#!/bin/bash
# Session 23, call 2: the int8 tensor-core GEMM for 9-64 tokens (kernels/mmq_q8.cu):
# the GPU matmul tests, then bench_matmul --widths on the 70b and 8b shapes
# (the int8 GEMM against dequantize + cuBLAS in the same run, and the D2D bound).
R=$1; B=/tmp/b && mkdir -p $B && tar -xJf $R/.gpubin/bin.txz -C $B
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > $OUT/gpu.txt
$B/ls_gpu_tests -tc="cuda matmul*" > $OUT/tests-matmul.txt 2>&1; echo "rc=$?" >> $OUT/tests-matmul.txt
tail -4 $OUT/tests-matmul.txt; grep -E "mmq|ERROR|FAILED" $OUT/tests-matmul.txt | head -30
$B/ls_bench_matmul --widths 70b > $OUT/widths-70b.txt 2>&1
$B/ls_bench_matmul --widths > $OUT/widths-8b.txt 2>&1
cat $OUT/widths-70b.txt $OUT/widths-8b.txt | grep -E "bound|widths"
