#!/bin/bash
# Session 35, call 2 (on the machine warm from call 1, which ran session 34's
# call 1 unchanged): session 34's calls 2 and 3 in one call, the device time
# being short: bench --batch 8,32 with the direct tile and the searched
# placement on and off (a trace each), then issue 14's CPU attention at
# 1k-16k in two rounds instead of four, and the timeline at 1k.
# Run: OUT=$OUT timeout 580 bash bench/results/raw-2026-12-05-s35/call2/run.sh $PWD
set -u
R=$1; O=$OUT
mkdir -p $O/batch $O/attn
OUT=$O/batch timeout 370 bash $R/bench/results/raw-2026-12-05-s34/call2/run.sh $R
echo "batch part rc=$?"
# Session 34's call 3 with its rounds cut to two (1: LS_POOL_PAUSE_US=0, 2: 50).
sed 's/for r in 1 2 3 4; do/for r in 1 2; do/' $R/bench/results/raw-2026-12-05-s34/call3/run.sh > /tmp/call3.sh
OUT=$O/attn timeout 190 bash /tmp/call3.sh $R
echo "attention part rc=$?"
