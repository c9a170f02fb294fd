#!/bin/bash
# Call 9 (session 6): CPU attention: block length x task order at 1k-16k, three runs.
O=$OUT; B=/tmp/b9; mkdir -p $B; tar xJf .gpubin/bin9.txz -C $B
date -u | tee $O/log.txt
for r in 1 2 3; do
$B/ls_bench_cpu_attention --threads 16 --reps 41 --ctx 1024,2048,4096,16384 --block 0,192,128 --order 0,1 2>&1 | tail -26 | tee -a $O/log.txt
done
