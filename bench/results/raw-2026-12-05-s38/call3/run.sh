#!/bin/bash
# Session 38, call 3: the per-token steps over the pool (c.f. call 2's op
# times), issue 18's replay (plain, K = 7, K chosen), issue 17's width 32
# with the issue's shape, issue 14's attention at 1k-2k (blocks), three rounds.
# Run: OUT=$OUT LIMIT=430 bash bench/results/raw-2026-12-05-s38/call3/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-430}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
mkdir -p $B $M $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nproc; grep -m1 "model name" /proc/cpuinfo; nvidia-smi --query-gpu=name --format=csv,noheader; el
for r in 1 2 3; do
  timeout 30 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048 --reps 61 > $O/attn-$r.txt 2>&1
  echo "attention round $r rc=$?"; grep -E "^ +[0-9]+ +16 " $O/attn-$r.txt | cut -c1-200
done; el
F=$M/70b-q4km-tied.gguf
[ -f $F ] || timeout 120 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
LS_CPU_OP_TIMES=1 timeout 60 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --batch 8 --prompt-tokens 128 -n 32 -c 256 --stats > $O/ops-hybrid8.txt 2>&1
echo "hybrid width 8 rc=$?"; grep -E "cpu op times|^\| [0-9]|CPU tier by width" $O/ops-hybrid8.txt | cut -c1-300; el
if left 120; then
  (cd $R && BIN=$B OUT=/tmp/spec MODELS=$M N=128 KS=" " ALPHA_KS="7 0" timeout 115 bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1)
  echo "spec rc=$?"; cut -c1-220 $O/spec.txt | grep -E "^plain|^a0|CPU tier"; el
fi
if left 80; then
  timeout 80 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --batch 32 --prompt-tokens 128 -n 128 -c 256 --stats > $O/batch-32.txt 2>&1
  echo "batch 32 rc=$?"; grep -E "^\| [0-9]" $O/batch-32.txt | cut -d"|" -f1-5,12-20; grep -E "CPU tier by width" $O/batch-32.txt | cut -c1-250; el
fi
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
