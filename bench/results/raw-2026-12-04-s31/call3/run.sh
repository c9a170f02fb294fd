#!/bin/bash
# Prepared in session 31 (no device lent) for the next session. Call 3: the
# AVX-512 dot's token pairs (session 31, default on; LS_DOT_PAIRS=0 turns
# them off) against the one-token float step, at the widths the dot serves
# (2-7 tokens: speculative verify steps of K = 1-6), 16 threads, the 70b's
# shapes, two rounds alternated; then the engine's verify cost at widths
# 4 and 8 with and without (replay draft at acceptance 1; ALPHA_KS=" ": none
# at 0.7).
# Run: OUT=$OUT bash bench/results/raw-2026-12-04-s31/call3/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd /tmp
m() { grep -E "^q[46]_K" $1 | tr -s ' ' | cut -d' ' -f1-4,6,15,19,21; }
for r in 1 2; do
  P="1 0"; [ $r = 2 ] && P="0 1"
  for p in $P; do
    LS_DOT_PAIRS=$p timeout 150 $B/ls_bench_cpu_matmul --threads 16 --ntok 2,4,6,7 --types q4_k,q6_k --act q8 --path dot --shapes 70b --reps 5 > $O/dot-$r-p$p.txt 2>&1
    echo "dot round $r pairs $p rc=$?"; m $O/dot-$r-p$p.txt
  done
done; el
for p in 1 0; do
  cd $R && LS_DOT_PAIRS=$p BIN=$B OUT=$O/spec-p$p MODELS=$M N=64 KS="3 7" ALPHA_KS=" " timeout 200 bash scripts/gpu_speculative_check.sh > $O/spec-p$p.txt 2>&1
  echo "spec pairs $p rc=$?"; cut -c1-200 $O/spec-p$p.txt
done; el
cd $O && tar -czf out.tgz dot-*.txt spec-p* && rm -rf dot-*.txt spec-p?
