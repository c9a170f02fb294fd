#!/bin/bash
# Session 40, call 3 (the device time left after refused starts: no 70b):
# the new default's GPU tests (a group split between the int8 GEMM and the
# GEMV, graphs against direct launches, the pipeline's batch test) and
# --widths 70b's auto column against the forced kernels, and 8b's (its
# 4,096-row matrices stay on the GEMV at decode widths until measured).
# Run: OUT=$OUT LIMIT=200 bash bench/results/raw-2026-12-05-s40/call3/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b; LIMIT=${LIMIT:-200}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
mkdir -p $B $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nvidia-smi --query-gpu=name --format=csv,noheader; el
(cd $R && timeout 60 $B/ls_gpu_tests -tc="cuda matmul: decode widths*,cuda backend: decode through CUDA graphs*" -d > $O/tests.txt 2>&1)
echo "tests rc=$?"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|FATAL|ERROR" $O/tests.txt | tail -6; el
timeout 40 $B/ls_bench_matmul --widths 70b > $O/widths-70b.txt 2>&1; echo "widths 70b rc=$?"
grep "widths q4_K\|widths q6_K" $O/widths-70b.txt | sed -E 's/ +GB\/s +[0-9]+//g; s/widths //; s/ +[0-9.]+ MB://; s/ us//g' | sed -E 's/\| n=([0-9]+) (auto|mmq!|reg!|str!|f16) +([0-9.]+) +[0-9.]+ ?/\1\2 \3 /g' | cut -c1-330; el
(cd $R && timeout $((LIMIT - SECONDS - 25)) $B/ls_gpu_tests -tc="cuda pipeline batch*" -d > $O/tests-batch.txt 2>&1)
echo "pipeline batch rc=$?"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|FATAL|ERROR" $O/tests-batch.txt | tail -4; el
timeout 25 $B/ls_bench_matmul --widths 8b > $O/widths-8b.txt 2>&1; echo "widths 8b rc=$?"
grep "widths q4_K\|widths q6_K" $O/widths-8b.txt | sed -E 's/ +GB\/s +[0-9]+//g; s/widths //; s/ +[0-9.]+ MB://; s/ us//g' | sed -E 's/\| n=([0-9]+) (auto|mmq!|reg!|str!|f16) +([0-9.]+) +[0-9.]+ ?/\1\2 \3 /g' | cut -c1-330; el
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
