#!/bin/bash
# Session 61, call 2 (any GPU machine): main after demote and endgame came
# out (bin.txz built at .gpubin/bin.commit).
# (1) the whole GPU suite and the whole unit suite on this host (its Xeon
#     runs the AVX-512 VNNI / AMX paths the dev machine lacks);
# (2) issue 14's attention line as main stands: 1k-16k, the read alone
#     beside it, three rounds; then 12 and 16 threads at 1k alternated.
# Run: OUT=$OUT bash bench/results/raw-2026-12-08-s61/call2/run.sh $PWD (timeout 590; carry
# .gpubin/bin.txz; model/weights/*.gguf moved aside)
set -u
R=$1; O=$OUT/r; LIMIT=560
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
lscpu | grep -E "Model name|^CPU\(s\)"
timeout 240 $B/ls_gpu_tests > $O/gpu-tests.txt 2>&1; echo "gpu tests rc=$?"
grep -E "test cases|assertions|ERROR|FAILED|SKIP" $O/gpu-tests.txt | head -12; el; pack
timeout 150 $B/ls_unit_tests > $O/unit-tests.txt 2>&1; echo "unit tests rc=$?"
grep -E "test cases|assertions|ERROR|FAILED" $O/unit-tests.txt | head -12; el; pack
row() { grep -E "^ +[0-9]+ +1[26] " "$1" | awk '{printf "%s t%s %s %s us %s; ", $1, $2, $7, $10, $NF}'; echo; }
for r in 1 2 3; do
  left 40 || break
  timeout 60 $B/ls_bench_cpu_attention --ctx 1024,2048,4096,8192,16384 --reps 31 --read > $O/attn-$r.txt 2>&1
  echo "round $r: host $(awk '/^ +16 /{print $2; exit}' $O/attn-$r.txt) GB/s"; row $O/attn-$r.txt
done; el
for r in 1 2; do
  left 30 || break
  timeout 40 $B/ls_bench_cpu_attention --ctx 1024 --reps 61 --threads 12,16 > $O/thr-$r.txt 2>&1
  echo "threads round $r: host $(awk '/^ +1[26] /{print $1 ": " $2}' $O/thr-$r.txt | tr '\n' ' ')"; row $O/thr-$r.txt
done; el
finish
