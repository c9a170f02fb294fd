#!/bin/bash
# Session 58, call 1b: on call 1's machine while warm, the one-line command
# below (carry .gpubin/fp16.txz, as call 1's): the f16 CPU attention against
# the f32 one with the caches in the last-level cache (--kv-gib 0.02), 1
# and 16 threads, two rounds; then from DRAM with the software prefetch off.
# Its whole output is in the record (2026-12-07-s58.md).
B=/tmp/b; mkdir -p $B; tar -xJf .gpubin/fp16.txz -C $B; for r in 1 2; do for th in 1 16; do timeout 60 $B/ls_bench_cpu_attention_fp16 --threads $th --ctx 1024,4096,16384 --reps 31 --f16 off,on --kv-gib 0.02 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ " | awk '{print $1,$2,$3,$10" us",$13" GB/s",$NF}'; done; done; timeout 60 $B/ls_bench_cpu_attention_fp16 --ctx 1024,4096 --reps 41 --f16 off,on --prefetch k1v2n,none 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ " | awk '{print $1,$2,$3,$8,$10" us",$NF}'
