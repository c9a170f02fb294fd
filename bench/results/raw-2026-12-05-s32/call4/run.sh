#!/bin/bash
# Session 32, call 4: issue 18's replay check on the tied synthetic 70b at
# 24 GiB (scripts/gpu_speculative_check.sh, with --stats and the routing's
# summary since session 31): plain decoding, K = 1 and 7 at acceptance 1,
# K = 7 and the run's own K at 0.7, 96 tokens.
# Run: OUT=$OUT bash bench/results/raw-2026-12-05-s32/call4/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
[ -x $B/layerstream ] || tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
rm -f $M/70b.gguf
cd $R && BIN=$B OUT=$O/spec MODELS=$M N=96 KS="1 7" ALPHA_KS="7 0" timeout 450 bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1
echo "spec rc=$?"; cut -c1-240 $O/spec.txt; el
cd $O && tar -czf spec.tgz spec spec.txt && rm -rf spec
