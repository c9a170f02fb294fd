#!/bin/bash
# Session 28, call 3: a second sweep after 4096 prompt tokens (auto against
# fixed --cpu-layers, one sweep; call 2's auto was 95.6 % of the best), the
# multi-turn chat on the 70b (five turns, ~100-token messages and 200 new
# tokens each; default flags), and the CPU attention alone (1k-16k, 16
# threads and 14-15 beside, the probe at each thread count), three rounds.
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
timeout 250 $B/layerstream synth -q -o $M/70b-q4km.gguf --preset 70b --quant q4_k_m; echo "synth rc=$?"; el
cd $R
BIN=$B OUT=$O/check MODELS=$M PARTS="sweep chat" SWEEP="auto,24,26,28" SWEEP_PROMPTS="4096" \
  CHAT_N=200 timeout 400 bash scripts/gpu_hybrid_default_check.sh > $O/check.txt 2>&1
echo "check rc=$?"; cat $O/check.txt | cut -c1-500; el
A=$B/ls_bench_cpu_attention
f() { grep -E "^ +[0-9]+ +[0-9]+ " $1 | awk '{print $1, $2, $7, $10 " us", $13 " GB/s", "host", $14, "ratio", $15}'; }
for r in 1 2 3; do
  T=16,15,14; [ $((r % 2)) = 0 ] && T=14,15,16
  timeout 60 $A --threads $T --ctx 1024,2048,4096,16384 --reps 41 > $O/attn$r.txt 2>&1
  echo "attention round $r rc=$?"; f $O/attn$r.txt
done; el
