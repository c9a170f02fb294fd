#!/bin/bash
# Session 37, call 6: issue 18's plain and K = 7 at acceptance 0.7, twice
# more (new binary; call 5's runs had KS="", which the script takes as its
# default widths, and ran out of time).
# Run: OUT=$OUT bash bench/results/raw-2026-12-05-s37/call6/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
[ -x $B/layerstream ] || tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
F=$M/70b-q4km-tied.gguf
[ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
for r in 1 2; do
  (cd $R && BIN=$B OUT=/tmp/spec6-$r MODELS=$M N=128 KS=" " ALPHA_KS="7" timeout 115 bash scripts/gpu_speculative_check.sh > $O/spec-$r.txt 2>&1)
  echo "spec $r rc=$?"; cut -c1-200 $O/spec-$r.txt | grep -E "^plain|^a0"; el
done
(cd /tmp && tar -czf $O/spec-err.tgz spec6-*/*.err)
