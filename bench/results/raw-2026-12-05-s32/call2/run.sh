#!/bin/bash
# Session 32, call 2 (a trimmed s31 call 3): (1) the chunk form's dot,
# decoded straight into zmm since session 32, at 1 and 8 tokens against the
# lane form's, 16 threads, the 70b's shapes, two rounds; (2) the engine on the
# 70b at 24 GiB, bench --batch 1,8,32 (128-token prompts): default flags
# against LS_CPU_Q8_FORM=chunks, alternated (does the chunk form hold width 1
# now, and what does it give at 8 and 32?).
# Run: OUT=$OUT bash bench/results/raw-2026-12-05-s32/call2/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
[ -x $B/layerstream ] || tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd /tmp
m() { grep -E "^q[46]_K" $1 | tr -s ' ' | cut -d' ' -f1-4,6,15,19,21; }
for r in 1 2; do
  timeout 100 $B/ls_bench_cpu_matmul --threads 16 --ntok 1,8 --types q4_k,q6_k --act q8 --path dot --form lanes,chunks --shapes 70b --reps 5 > $O/form-$r.txt 2>&1
  echo "form round $r rc=$?"; m $O/form-$r.txt
done; el
F=$M/70b.gguf
[ -f $F ] || timeout 120 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m; echo "synth rc=$?"; el
for v in default LS_CPU_Q8_FORM=chunks default LS_CPU_Q8_FORM=chunks; do
  E=(); [ $v != default ] && E=($v)
  env "${E[@]}" timeout 110 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,32 --prompt-tokens 128 -n 24 -c 256 --stats > $O/batch-${v//=/-}-$SECONDS.txt 2>&1
  echo "batch $v rc=$?"; f2=$(ls -t $O/batch-*.txt | head -1)
  grep -E "^\| [0-9]" $f2 | cut -d"|" -f1-5,15-20; grep -E "CPU tier by width" $f2 | cut -c1-200
done; el
cd $O && tar -czf out.tgz form-*.txt batch-*.txt && rm -f form-*.txt batch-*.txt
