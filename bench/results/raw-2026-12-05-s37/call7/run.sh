#!/bin/bash
# Session 37, call 7: issue 18's plain and K = 7 at acceptance 0.7 with
# dd47a17 (the direct tile's Q4_K nibbles by a mask), three rounds, while
# LIMIT lasts. Carry: .gpubin/bin.txz.
# Run: OUT=$OUT LIMIT=250 bash bench/results/raw-2026-12-05-s37/call7/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-250}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
mkdir -p $B $M
rm -rf $B/*; tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
F=$M/70b-q4km-tied.gguf
[ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
for r in 1 2 3; do
  left 70 || break
  (cd $R && BIN=$B OUT=/tmp/spec7-$r MODELS=$M N=128 KS=" " ALPHA_KS="7" timeout $((LIMIT - SECONDS - 5)) bash scripts/gpu_speculative_check.sh > $O/spec-$r.txt 2>&1)
  echo "spec $r rc=$?"; cut -c1-200 $O/spec-$r.txt | grep -E "^plain|^a0|CPU tier"; el
done
(cd /tmp && tar -czf $O/spec-err.tgz spec7-*/*.err)
