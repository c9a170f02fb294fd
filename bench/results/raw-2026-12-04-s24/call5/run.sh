#!/bin/bash
# Session 24, call 5: the chunk GEMM with its weights packed as contiguous
# 16-row tiles, x quantized and packed over all threads. Tests on the device,
# then ls_bench_cpu_matmul lanes against chunks (dot, GEMM), 70b shapes, and
# one thread from L2.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
timeout 120 $B/ls_unit_tests -tc="cpu_*" > $O/unit.txt 2>&1
echo "unit rc=$?"; grep -E "test cases|SKIPPED" $O/unit.txt | sort | uniq -c; grep -B4 -A8 "ERROR" $O/unit.txt | head -30
timeout 200 $B/ls_bench_cpu_matmul --threads 16 --ntok 1,8,16,32,64 --types q4_k,q6_k --act q8 --path dot,gemm --form lanes,chunks --amx on --shapes 70b --reps 5 --weights-gib 2 > $O/mm.txt 2>&1
echo "bench rc=$?"; grep -E "core clock" $O/mm.txt; grep -E "^q" $O/mm.txt | awk '{print $1,$3,$4,$6,$8,$15,$21}'
timeout 60 $B/ls_bench_cpu_matmul --threads 1 --ntok 1,16,32,64 --types q4_k,q6_k --act q8 --path gemm --form lanes,chunks --amx on --shapes l2 --weights-gib 0 --reps 7 > $O/l2.txt 2>&1
echo "l2 1 thread"; grep -E "^q" $O/l2.txt | awk '{print $1,$4,$6,$15}'; el
