#!/bin/bash
# Session 23, call 3: the int8 GEMM with block-major x and 1 or 2 m-tiles a
# warp: the GPU matmul and shared-x tests, then bench_matmul --widths (70b with
# LS_MMQ_MT=1 and 2, 8b with 2), the f16 path and the D2D bound in each run.
R=$1; B=/tmp/b && mkdir -p $B && tar -xJf $R/.gpubin/bin.txz -C $B
$B/ls_gpu_tests -tc="cuda matmul*" > $OUT/tests-matmul.txt 2>&1; echo "rc=$?" >> $OUT/tests-matmul.txt
tail -4 $OUT/tests-matmul.txt; grep -E "mmq|ERROR|FAILED" $OUT/tests-matmul.txt | head -20
LS_MMQ_MT=1 $B/ls_bench_matmul --widths 70b > $OUT/widths-70b-mt1.txt 2>&1
LS_MMQ_MT=2 $B/ls_bench_matmul --widths 70b > $OUT/widths-70b-mt2.txt 2>&1
LS_MMQ_MT=2 $B/ls_bench_matmul --widths > $OUT/widths-8b-mt2.txt 2>&1
for f in $OUT/widths-*.txt; do echo "== $f"; grep -E "bound: D2D copy|widths" $f | sed -E 's/ +/ /g'; done
