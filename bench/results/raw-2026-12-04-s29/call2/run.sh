#!/bin/bash
# Session 29, call 2: issue 18's 70b line on a tied synthetic 70b Q4_K_M
# (synth --tied: its greedy tokens do not flip with a verify step's width,
# so the replay draft's acceptance is its ALPHA), --vram-budget 24GiB
# --ram-budget 48GiB: plain decode, the replay at acceptance 1 for K = 1, 3,
# 7 (verify steps of widths 2, 4, 8), and at 0.7 for K = 3, 7 and K chosen
# by the run; all in one call (scripts/gpu_speculative_check.sh).
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
cd $R && BIN=$B OUT=$O/spec MODELS=$M KS="1 3 7" ALPHA_KS="3 7 0" timeout 540 bash scripts/gpu_speculative_check.sh 2>&1 | cut -c1-300
echo "spec rc=$?"; el
