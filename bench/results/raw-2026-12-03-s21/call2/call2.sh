#!/bin/bash
# Session 21, call 2 (H200): where the CPU GEMM's time goes at 2-32 tokens.
# The dot against the GEMM (pairs tile) at 2-8 tokens; AMX against the
# pairs tile at 8-32; and a throwaway probe of the AMX kernel (not in the
# tree: LS_AMX_PROBE=1 skips its float step, =2 its tile multiplies) on one
# thread from L2 and on 16 threads at the 70b shapes.
set -u
O=$OUT/l; mkdir -p $O; B=/tmp/bn; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
date -u; tar -xJf .gpubin/bin.txz -C $B || exit 2
C=$B/ls_bench_cpu_matmul; P=$B/ls_bench_cpu_matmul_probe
med() { awk '/ q8 /{print $1, $3, $4, $5, $6, $8, $15, $20, $21}'; }
LS_GEMM_PAIRS=1 timeout 150 $C --threads 16 --ntok 1,2,4,6,8 --types q4_k,q6_k --act q8 --path dot,gemm --amx off --shapes 70b --reps 5 > $O/dot-gemm.txt 2>&1; med < $O/dot-gemm.txt; el
LS_GEMM_PAIRS=1 timeout 150 $C --threads 16 --ntok 8,16,32,64 --types q4_k,q6_k --act q8 --path gemm --amx off,on --shapes 70b --reps 5 > $O/amx-pairs.txt 2>&1; med < $O/amx-pairs.txt; el
for m in 0 1 2 0 1 2; do echo "== probe $m"; LS_AMX_PROBE=$m timeout 60 $P --threads 1 --ntok 16,32 --types q4_k --act q8 --path gemm --amx on --shapes l2 --weights-gib 0 --reps 9 2>&1 | med; done > $O/probe-l2.txt; cat $O/probe-l2.txt; el
for m in 0 1 2; do echo "== probe $m"; LS_AMX_PROBE=$m timeout 90 $P --threads 16 --ntok 16,32 --types q4_k --act q8 --path gemm --amx on --shapes 70b --reps 5 2>&1 | med; done > $O/probe-70b.txt; cat $O/probe-70b.txt; el
date -u
