#!/usr/bin/env bash
# Session 15, call 2: is the CPU attention compute-bound on this Xeon? The same bench
# with the caches in the CPU's caches (--kv-gib tiny: one layer, reused) at 1 and 16
# threads, and from DRAM at 1..16 threads; the CPU's flags and clocks.
set -u
O=$OUT; mkdir -p $O/bin && tar xJf .gpubin/att.txz -C $O/bin
B=$O/bin/ls_bench_cpu_attention
{ date -u; lscpu; grep MHz /proc/cpuinfo | sort | uniq -c; } > $O/sys.txt 2>&1
grep -o -w "avx512_fp16\|amx_bf16\|amx_fp16\|amx_int8\|avx512_bf16\|avx512fp16" /proc/cpuinfo | sort | uniq -c
$B --threads 1,16 --reps 41 --ctx 256,1024 --span 128,256 --kv-gib 0.001 --host-bytes-gib 1 > $O/cache.txt 2>&1
$B --threads 1,2,4,8,16 --reps 41 --ctx 1024,16384 --span 128,256 --host-bytes-gib 1 > $O/dram.txt 2>&1
grep -E "^ +[0-9]+ +[0-9]+ avx" $O/cache.txt | sed 's/^/cache /'
grep -E "^ +[0-9]+ +[0-9]+ avx" $O/dram.txt | sed 's/^/dram /'
grep MHz $O/sys.txt | head -5
