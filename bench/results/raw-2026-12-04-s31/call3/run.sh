#!/bin/bash
# Prepared in session 31 (no device lent) for the next session. Call 3:
# (1) the AVX-512 dot's token pairs (session 31, default on; LS_DOT_PAIRS=0
# turns them off) against the one-token float step, at the widths the dot
# serves (2-7 tokens: batches of a few sequences, verify steps of K = 1-6),
# 16 threads, the 70b's shapes, two rounds alternated; (2) the engine on the
# 70b at 24 GiB, bench --batch 4,32 (128-token prompts): default flags,
# LS_DOT_PAIRS=0, and LS_CPU_Q8_FORM=chunks (the chunk form: +2-8 % at
# width 32 in session 24; with hybrid_depth, does width 32 reach 100?).
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
# (1b, session 32) the chunk form's dot, decoded straight into zmm now, at 1
# and 8 tokens against the lane form's: the width-1 figure decides whether
# the chunk form can be the default (issue 17: batch 1 must not fall).
for r in 1 2; do
  timeout 150 $B/ls_bench_cpu_matmul --threads 16 --ntok 1,8 --types q4_k,q6_k --act q8 --path dot --form lanes,chunks --shapes 70b --reps 7 > $O/form-$r.txt 2>&1
  echo "form round $r rc=$?"; m $O/form-$r.txt
done; el
F=$M/70b.gguf
[ -f $F ] || timeout 120 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m; echo "synth rc=$?"; el
for v in default LS_DOT_PAIRS=0 LS_CPU_Q8_FORM=chunks; do
  E=(); [ $v != default ] && E=($v)
  env "${E[@]}" timeout 150 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --batch 4,32 --prompt-tokens 128 -n 32 -c 256 --stats > $O/batch-${v//=/-}.txt 2>&1
  echo "batch $v rc=$?"; grep -E "^\| [0-9]" $O/batch-${v//=/-}.txt | cut -d"|" -f1-5,15-20; grep -E "CPU tier by width" $O/batch-${v//=/-}.txt | cut -c1-400
done; el
cd $O && tar -czf out.tgz dot-*.txt form-*.txt batch-*.txt && rm -f dot-*.txt form-*.txt batch-*.txt
