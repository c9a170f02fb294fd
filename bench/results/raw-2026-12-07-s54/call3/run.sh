#!/bin/bash
# Session 54, call 3: issue 14's 1k line, the shape of a call. At 1k (one
# token, 70b layer, 16-core Xeon) the kernel's choice is blocks of 128 with
# the row's ends halved (taper): 80 tasks for 16 threads, whose ends spread
# by about a block (session 26's timeline). Here blocks of 256 (32 tasks,
# two a thread), taper on and off, 14-16 threads, pinned or not, and the
# same tasks reading alone (--read), three rounds. The bench's ratio is to
# the host bound at the row's own thread count: compare against the
# 16-thread bound by hand.
# Run: OUT=$OUT LIMIT=200 bash bench/results/raw-2026-12-07-s54/call3/run.sh $PWD (timeout 220; carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-200}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
A=$B/ls_bench_cpu_attention
for r in 1 2 3; do
  left 40 || break
  timeout 60 $A --threads 14,15,16 --ctx 1024 --block 0,256 --taper on,off --pin off,on --reps 61 --read \
    > $O/shape-$r.txt 2>&1
  echo "round $r rc=$?"; grep -E "^ +(1[4-6]) +[0-9.]+ |^ +1024 " $O/shape-$r.txt; el; pack
done
finish
