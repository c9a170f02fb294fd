#!/bin/bash
# Prepared in session 31 (no device lent) for the next session. Call 4:
# prompt caching as a chat user meets it, the 70b at 24 GiB behind
# `layerstream serve` (default flags): a five-turn chat through
# /v1/chat/completions (scripts/serve_chat.py), each turn resending the
# conversation, with cache_prompt on and off; time to first text per turn.
# A ~1,000-word system prompt makes the resent part weigh.
# Run: OUT=$OUT bash bench/results/raw-2026-12-04-s31/call4/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
F=$M/70b.gguf
[ -f $F ] || timeout 120 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m; echo "synth rc=$?"; el
$B/layerstream serve -m $F --vram-budget 24GiB --ram-budget 48GiB --port 8091 --parallel 2 -c 4096 > $O/serve.log 2>&1 &
for i in $(seq 1 120); do curl -sf localhost:8091/health > /dev/null && break; sleep 1; done; el
for mode in on off; do
  echo "== cache_prompt $mode"
  timeout 200 python3 $R/scripts/serve_chat.py http://127.0.0.1:8091 5 32 $mode 1000 2>&1
done; el
curl -s localhost:8091/metrics | grep -E "prompt_tokens|kv_blocks" > $O/metrics.txt
kill %1; wait; tail -5 $O/serve.log
