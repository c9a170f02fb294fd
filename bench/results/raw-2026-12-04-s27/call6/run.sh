#!/bin/bash
# Session 27, call 6: issue 14's sweep line: fixed --cpu-layers against auto
# (the default) in one sweep, after 4096 and 1 prompt tokens (4096 first: the budget may end the call), on one machine,
# the calibration at load with 13 reps a layer and the first re-planning move all the way, later moves on 4 steps and a gain above the noise of the steps seen at the count; the re-planner's moves and why its last decision made none
# (--stats).
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
[ -f $M/70b-q4km.gguf ] || { timeout 250 $B/layerstream synth -q -o $M/70b-q4km.gguf --preset 70b --quant q4_k_m; echo "synth rc=$?"; }
el
cd $R
BIN=$B OUT=$O/check MODELS=$M PARTS="sweep" SWEEP="auto,24,26,28" SWEEP_PROMPTS="4096 1" timeout 290 \
  bash scripts/gpu_hybrid_default_check.sh > $O/check.txt 2>&1
echo "check rc=$?"; cat $O/check.txt | cut -c1-400; el
