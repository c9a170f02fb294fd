#!/bin/bash
# Session 30, call 1. (1) The CPU attention alone, 1k-16k, 16 threads: a
# split call's blocks from one counter (claim, the default) against a run
# per thread taken from the front, the others' from the back (ranges;
# AttnCpuTuning::ranges), pinned and not, three rounds with orders
# alternated; ranges with blocks of 64 at 1k-2k; one round with the
# timeline. (2) The interleaved int8 dot on one core from L2
# (LS_DOT_IL=0|1, AVX-512 and AVX2), alternated. (3) Where the dot and the
# GEMM meet, 16 threads, 70b shapes, 4-8 tokens.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nproc; grep -m1 "model name" /proc/cpuinfo
mkdir -p $R/.ut && cd $R/.ut
timeout 120 $B/ls_unit_tests -tc="cpu_attention*" > $O/unit.txt 2>&1
echo "unit rc=$?"; grep -E "test cases|assertions" $O/unit.txt; el
cd /tmp
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1, $2, $5, $7, $10 " us", $13 " GB/s", "host", $14, "ratio", $15}'; }
for r in 1 2 3; do
  S=claim,ranges; P=off,on
  [ $((r % 2)) = 0 ] && S=ranges,claim && P=on,off
  timeout 90 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --reps 41 --sched $S --pin $P > $O/attn-$r.txt 2>&1
  echo "attention round $r rc=$?"; grep -E "^ +16 " $O/attn-$r.txt; f $O/attn-$r.txt
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048 --reps 41 --sched ranges --block 64,0 > $O/b64-$r.txt 2>&1
  echo "blocks 64 round $r rc=$?"; f $O/b64-$r.txt
done; el
timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,16384 --reps 41 --sched claim,ranges --timeline > $O/tl.txt 2>&1
echo "timeline rc=$?"; grep -E "^ +[0-9]+ +16|timeline" $O/tl.txt | cut -c1-240; el
m() { grep -E "^q[0-9]_K|^q[0-9]_0" $1 | awk '{print $1, $2, $3, $4, $15, $19, $21}'; }
for isa in best avx2; do
  for il in 1 0 1 0; do
    LS_DOT_IL=$il timeout 60 $B/ls_bench_cpu_matmul --threads 1 --isa $isa --ntok 1,2,3,4,6,8 --types q4_k,q6_k --act q8 --path dot --shapes l2 --weights-gib 0 --reps 41 > $O/l2-$isa-il$il.txt 2>&1
    echo "l2 $isa LS_DOT_IL=$il rc=$?"; m $O/l2-$isa-il$il.txt
  done
done; el
head -30 $O/l2-best-il1.txt | grep -vE "^q[0-9]" | head -20
for r in 1 2; do
  timeout 120 $B/ls_bench_cpu_matmul --threads 16 --ntok 4,5,6,7,8 --types q4_k,q6_k --act q8 --path dot,gemm --shapes 70b --reps 7 > $O/meet-$r.txt 2>&1
  echo "dot/gemm round $r rc=$?"; m $O/meet-$r.txt
done; el
cd $O && tar -czf all.tgz *.txt && rm -f l2-*.txt meet-*.txt b64-*.txt
