#!/bin/bash
# Session 24, call 4 (probe build, not in the tree): the chunk GEMM's kernel
# taken apart, weights not packed (LS_Q8C_PROBE=1: kernel only) against
# 3 (the float step without the mins' term), 4 (no float step: tile unit
# only), 5 (no tile multiplies: float step only). One thread from L2 and 16
# from DRAM, q4_K and q6_K, 1/16/32/64 tokens.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
for p in 1 3 4 5; do
  LS_Q8C_PROBE=$p timeout 60 $B/ls_bench_cpu_matmul --threads 1 --ntok 1,16,32,64 --types q4_k,q6_k --act q8 --path gemm --form chunks --shapes l2 --weights-gib 0 --reps 7 > $O/p$p-l2.txt 2>&1
  echo "probe $p l2 1 thread"; grep -E "^q" $O/p$p-l2.txt | awk '{print $1,$4,$15}' | paste -sd' '
  LS_Q8C_PROBE=$p timeout 60 $B/ls_bench_cpu_matmul --threads 16 --ntok 1,16,32,64 --types q4_k --act q8 --path gemm --form chunks --shapes 70b --reps 5 --weights-gib 1 > $O/p$p.txt 2>&1
  echo "probe $p 16 threads"; grep -E "gate/up" $O/p$p.txt | awk '{print $1,$4,$15}' | paste -sd' '
done
grep -E "core clock" $O/p1.txt
