#!/bin/bash
# Session 23, call 1: the AMX attention block (scores on the tile unit) on the
# H200 machine's Xeon: its tests against the f64 reference, then the issue-14
# micro-benchmark, AMX and AVX-512 in alternating rounds of the same call.
set -x
cd "$(dirname "$0")"
R=$1; B=/tmp/b && mkdir -p $B && tar -xJf $R/.gpubin/bin.txz -C $B
lscpu | grep -i -E "model name|flags" | head -2 > $OUT/cpu.txt
$B/ls_unit_tests -tc="cpu_attention*,*gemm_q8*" > $OUT/tests.txt 2>&1; echo "tests rc=$?" >> $OUT/tests.txt
tail -3 $OUT/tests.txt
for r in 1 2 3; do
  $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --reps 41 --tiles auto,off > $OUT/r$r-a.txt 2>&1
  $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --reps 41 --tiles off,auto > $OUT/r$r-b.txt 2>&1
done
$B/ls_bench_cpu_attention --threads 1,2,4,8,16 --ctx 1024 --reps 21 --tiles auto,off > $OUT/threads.txt 2>&1
grep -h -E "^ +[0-9]+ +[0-9]+ (amx|avx512)" $OUT/r*.txt $OUT/threads.txt
