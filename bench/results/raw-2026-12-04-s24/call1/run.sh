#!/bin/bash
# Session 24, call 1: the chunk form (kernels/cpu/q8_chunks.h) on the H200
# host's Xeon. Its tests on AVX-512 VNNI and the real tile unit (bits of the
# AVX-512 dot and the AMX GEMM against the portable dot), the lane-form tests
# beside them; then ls_bench_cpu_matmul at the 70b shapes, lanes against
# chunks, dot and GEMM, 1-64 tokens, 16 threads, in the same run.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
date -u; tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
lscpu | grep -E "Model name|^CPU\(s\)|MHz" > $O/cpu.txt
timeout 120 $B/ls_unit_tests -tc="cpu_q8_chunks*,cpu_gemm_q8*,cpu_matmul_q8*" > $O/unit.txt 2>&1
echo "unit rc=$?"; grep -E "test cases|assertions|SKIPPED" $O/unit.txt | sort | uniq -c; grep -B4 -A8 "ERROR" $O/unit.txt | head -40; el
timeout 330 $B/ls_bench_cpu_matmul --threads 16 --ntok 1,4,8,16,32,64 --types q4_k,q6_k --act q8 --path dot,gemm --form lanes,chunks --amx on --shapes 70b --reps 5 --weights-gib 2 > $O/mm.txt 2>&1
echo "bench rc=$?"; grep -vE "^#" $O/mm.txt | awk '{print $1,$2,$3,$4,$6,$8,$15,$16,$17,$19,$21}' | column -t | head -120; el
