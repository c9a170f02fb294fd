#!/bin/bash
# Session 29, call 4: K chosen by the run (SpecK) after call 3 found it
# settling at K = 1 (a line through the two widest measured widths priced
# the wider ones too high; a cold first step at a width kept it out): plain
# decode, then the replay at acceptance 0.7 with K = 7 fixed and chosen by
# the run (twice), tied synthetic 70b Q4_K_M at 24 GiB, 128 tokens.
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
cd $R && BIN=$B OUT=$O/spec MODELS=$M N=128 KS=" " ALPHA_KS="7 0 0" timeout 500 bash scripts/gpu_speculative_check.sh 2>&1 | cut -c1-300
echo "spec rc=$?"; el
(cd $O && tar -czf spec.tgz spec && rm -rf spec)
