#!/bin/bash
# Session 23, call 5: the whole GPU suite with the int8 GEMM routed in (commit 641d091).
R=$1; B=/tmp/b; mkdir -p $B; tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
timeout 280 $B/ls_gpu_tests > $OUT/gpu-tests.txt 2>&1; echo "gpu tests rc=$?"
grep -E "test cases|assertions" $OUT/gpu-tests.txt; grep -B3 -A10 "ERROR" $OUT/gpu-tests.txt | head -40
