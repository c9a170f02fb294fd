#!/bin/bash
# Session 58, call 3 (not run: no machine came; fp16.txz holds binaries built
# at 4e7e746, the f16 variant's tree, ../f16-attention.patch): the f16 CPU attention where the arithmetic weighs more:
# a verify step's or a prompt chunk's tokens of one sequence (--tokens 8, 32:
# their shared blocks read once for all), f32 against f16 alternated, three
# rounds, 16 threads, from DRAM; then one token from the last-level cache
# (--kv-gib 0.02) for the arithmetic alone.
# Run: bash bench/results/raw-2026-12-07-s58/call3/run.sh $PWD (timeout 200; carry .gpubin/fp16.txz;
# model/weights/*.gguf moved aside)
set -u
R=$1; B=/tmp/b; mkdir -p $B; tar -xJf "$R/.gpubin/fp16.txz" -C $B || exit 2
row() { grep -E "^ +[0-9]+ +16 " "$1" | awk '{printf "%s %s %s %s us %s; ", $1, $3, $7, $10, $NF}'; }
for r in 1 2 3; do
  timeout 60 $B/ls_bench_cpu_attention_fp16 --ctx 1024,4096,16384 --reps 21 --tokens 1,8,32 \
    --f16 off,on > $OUT/t-$r.txt 2>&1
  echo "round $r: host $(awk '/^ +16 /{print $2; exit}' $OUT/t-$r.txt) GB/s"; row $OUT/t-$r.txt; echo
done
timeout 60 $B/ls_bench_cpu_attention_fp16 --ctx 1024,4096 --reps 31 --tokens 1,8 --f16 off,on \
  --kv-gib 0.02 > $OUT/llc.txt 2>&1
echo "from the LLC:"; row $OUT/llc.txt; echo
