#!/bin/bash
# Session 11, call 6: CPU attention of one 70b layer at 1k-16k (issue 14):
# the values streamed in the value loop (k1va, k2va: keys into L1 / L2 in the
# scores loop, values `ahead` rows on into L1 in the value loop) against the
# default (k1v2) and k2v2, at 8 and 16 rows ahead, with the read-only bound;
# three runs.
set -u
O=$OUT/l; mkdir -p $O; B=/tmp/b11; mkdir -p $B
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; lscpu | grep -E "Model name|Thread|Core"
tar -xJf .gpubin/bin.txz -C $B || exit 2
for r in 1 2 3; do
  timeout 100 $B/ls_bench_cpu_attention --threads 16 --reps 41 --ctx 1024,2048,4096,16384 \
    --prefetch k1v2,k2v2,k1va,k2va --ahead 8,16 --read 2>&1 | tee $O/attention-$r.txt | grep -E "^ +[0-9]|^ +16 "
done; el
tar -cJf $OUT/s11call6.txz -C $O . ; el
