#!/bin/bash
# Call 2 (session 5): CPU attention, rows vs head-major cache layout.
O=$OUT; B=/tmp/b2; mkdir -p $B; tar xJf .gpubin/bin2.txz -C $B
for i in 1 2; do $B/ls_bench_cpu_attention --threads 1,8,16 --ctx 1024,4096,16384 --reps 15 --layout rows,heads 2>&1 | tail -19; done | tee $O/attn.txt
