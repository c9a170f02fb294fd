#!/bin/bash
# Call 8 (session 6): CPU attention knobs (block length, prefetch distance) at 1k-16k.
O=$OUT; B=/tmp/b8; mkdir -p $B; tar xJf .gpubin/bin8.txz -C $B
date -u | tee $O/log.txt; lscpu | grep -E "Model name|Thread|Core|Socket|L2|L3" | tee -a $O/log.txt
for r in 1 2; do
$B/ls_bench_cpu_attention --threads 16 --reps 41 --ctx 1024,2048,4096,16384 --block 0,128,64 --ahead 0,16,32 2>&1 | tail -38 | tee -a $O/log.txt
done
$B/ls_bench_cpu_attention --threads 8,12 --reps 41 --ctx 1024 --block 0,128,64 2>&1 | tail -8 | tee -a $O/log.txt
