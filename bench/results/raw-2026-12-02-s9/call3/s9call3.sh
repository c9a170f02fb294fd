#!/bin/bash
# Session 9, call 3: the GEMM's weight pack, old (HEAD~1) and new (straight
# from Q4_K blocks), per core and in the kernel at 16 threads; the tile
# kernels' own costs per row-chunk-token (AVX2, AVX-512 VNNI, AMX).
set -u
date -u; lscpu | grep -E "Model name|MHz|L2|L3" | head -5
cd .gpubin
for v in old new; do echo "== packbench $v"; ./packbench_$v; done
for v in old new; do echo "== bench_cpu_matmul $v"
  timeout 150 ./bcm_$v --threads 16 --ntok 8,16,32 --types q4_k --act q8 --path gemm --amx off,on --shapes 70b --reps 7 2>&1 | grep -vE "^#|^$"
done
