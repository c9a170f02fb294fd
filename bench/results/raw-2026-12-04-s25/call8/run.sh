#!/bin/bash
# Session 25, call 8: the CPU attention alone again (call 7's rounds 2-3 ran
# slow for both forms), then layerstream with default flags on the 70b after
# prompts of 1024 and 4096 tokens (call 7 ran out of time there) and a
# five-turn chat, the tiled KvCache in the hybrid plan's CPU tier.
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
for r in 1 2 3; do
  L=tiles,heads; [ $r = 2 ] && L=heads,tiles
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,8192,16384 --layout $L --reps 41 --json $O/attn-$r.json > $O/attn-$r.txt 2>&1
  echo "attn round $r rc=$?"; grep -E "^ +[0-9]+ +16 " $O/attn-$r.txt | awk '{print $1,$4,$7,$10,$14,$15}'
done; el
[ -f $M/70b-q4km.gguf ] || timeout 200 $B/layerstream synth -q -o $M/70b-q4km.gguf --preset 70b --quant q4_k_m; echo "synth rc=$?"; el
cd $R
BIN=$B OUT=$O/check MODELS=$M PARTS="prompts chat" PROMPTS="1024 4096" CHAT_N=60 timeout 200 \
  bash scripts/gpu_hybrid_default_check.sh > $O/check.txt 2>&1
echo "check rc=$?"; cat $O/check.txt | head -60; el
