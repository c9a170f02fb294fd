#!/bin/bash
# Session 29, call 3: call 2 again (issue 18, tied synthetic 70b Q4_K_M at
# 24 GiB) after two fixes: the replay draft makes exactly round(0.3 N) of
# its N positions wrong (a coin per position made 0.625 of 64 right in
# call 2), and K chosen by the run (SpecK) no longer sticks at K = 16.
# Plain decode; replay at acceptance 1 for K = 1, 3, 7, 15 (the verify
# step by width); at 0.7 for K = 3, 7 and K chosen by the run.
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
cd $R && BIN=$B OUT=$O/spec MODELS=$M N=128 KS="1 3 7 15" ALPHA_KS="3 7 0" timeout 560 bash scripts/gpu_speculative_check.sh 2>&1 | cut -c1-300
echo "spec rc=$?"; el
(cd $O && tar -czf spec.tgz spec && rm -rf spec)
