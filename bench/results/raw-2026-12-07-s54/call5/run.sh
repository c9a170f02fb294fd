#!/bin/bash
# Session 54, call 5: where a 1k call's time goes now (issue 14), on a fresh
# machine: --timeline (threads' start, first/middle/last block, the ends'
# spread) and --read (the same tasks reading alone), three rounds, then one
# --timeline-threads call for each thread's blocks.
# Run: OUT=$OUT LIMIT=120 bash bench/results/raw-2026-12-07-s54/call5/run.sh $PWD (timeout 140; carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-120}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
A=$B/ls_bench_cpu_attention
for r in 1 2 3; do
  timeout 30 $A --threads 16 --ctx 1024,4096 --reps 61 --timeline --read > $O/tl-$r.txt 2>&1
  echo "round $r rc=$?"; grep -E "^ +16 +[0-9.]+ |^ +(1024|4096) |timeline|calls where" $O/tl-$r.txt
done; el; pack
timeout 30 $A --threads 16 --ctx 1024 --reps 21 --timeline-threads > $O/tlt.txt 2>&1
echo "threads rc=$?"; sed -n '/ctx thr/,$p' $O/tlt.txt | head -60
finish
