#!/bin/bash
# Session 53, call 2 (the same warm H100 machine as call 1): issue 14's 1k
# line as a distribution (eight runs of the default, each beside its own host
# bound, then the 1k-16k table twice), and the token sharing at 4k and 16k in
# three alternated rounds.
# Run: OUT=$OUT LIMIT=110 bash bench/results/raw-2026-12-07-s53/call2/run.sh $PWD   (timeout 130; carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-110}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
A=$B/ls_bench_cpu_attention
for r in 1 2 3 4 5 6 7 8; do
  timeout 20 $A --threads 16 --ctx 1024 --reps 61 > $O/k1-$r.txt 2>&1
  echo "1k run $r: $(grep -E '^ +1024 +16 ' $O/k1-$r.txt)"
done; el; pack
for r in 1 2; do
  timeout 30 $A --threads 16 --ctx 1024,2048,4096,16384 --reps 41 > $O/table-$r.txt 2>&1
  echo "table $r:"; grep -E '^ +[0-9]+ +16 ' $O/table-$r.txt
done; el; pack
for r in 1 2 3; do
  for s in on off; do
    timeout 30 $A --threads 16 --ctx 4096,16384 --tokens 8 --share $s --reps 21 > $O/share-$s-$r.txt 2>&1
    echo "share $s round $r:"; grep -E '^ +[0-9]+ +16 ' $O/share-$s-$r.txt
  done
done; el
finish
