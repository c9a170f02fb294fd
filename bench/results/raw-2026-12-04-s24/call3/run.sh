#!/bin/bash
# Session 24, call 3 (probe build, not in the tree): where the chunk GEMM's
# time goes. LS_Q8C_PROBE=1 skips the weight pack, =2 the tile kernel; q4_K
# and q6_K gate/up at 1, 16, 32, 64 tokens, 16 threads from DRAM, and one
# thread from L2.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
for p in 0 1 2; do
  LS_Q8C_PROBE=$p timeout 60 $B/ls_bench_cpu_matmul --threads 16 --ntok 1,16,32,64 --types q4_k,q6_k --act q8 --path gemm --form chunks --shapes 70b --reps 5 --weights-gib 2 > $O/probe$p.txt 2>&1
  echo "probe $p"; grep -E "gate/up|down" $O/probe$p.txt | awk '{print $1,$3,$4,$6,$15,$21}'
  LS_Q8C_PROBE=$p timeout 60 $B/ls_bench_cpu_matmul --threads 1 --ntok 1,16,32,64 --types q4_k,q6_k --act q8 --path gemm --form chunks --shapes l2 --weights-gib 0 --reps 5 > $O/probe$p-l2.txt 2>&1
  echo "probe $p l2 1 thread"; grep -E "^q" $O/probe$p-l2.txt | awk '{print $1,$3,$4,$6,$15}'
done
grep -E "core clock|GB/s median" -A1 $O/probe0.txt | head -4
