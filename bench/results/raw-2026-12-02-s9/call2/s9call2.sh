#!/bin/bash
# Session 9, call 2: issue 19's GPU line again with the client counting from
# /metrics (call 1's client counted text chunks); the cost of one
# sequence's step of W tokens (a verify step's shape) at W = 1..64.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/m9; B=/tmp/b9; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; tar -xJf .gpubin/s9bin2.txz -C $B || exit 2
L=$B/layerstream
[ -f $M/70b.gguf ] || timeout 60 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
P="-m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB"
$L serve $P --port 0 --parallel 32 -c 256 --max-queue 64 > $O/serve.log 2>&1 &
spid=$!
url=
for i in $(seq 1 600); do
  url=$(grep -o 'http://127.0.0.1:[0-9]*' $O/serve.log | head -n 1 || true)
  [ -n "$url" ] && curl -sf "$url/health" > /dev/null 2>&1 && break
  sleep 0.1
done
echo "server at $url"; el
for r in 1 2; do
  n=16; [ $r = 2 ] && n=128  # round 1 warms the process at width 32
  timeout 110 python3 scripts/serve_load.py $url 32 128 $n 128256 $O/serve-r$r.json > $O/serve-r$r.txt 2>&1
  echo "round $r rc=$?"; grep -E "decode|tok_s_all_in|first_text_p50|window|FAIL|rror" $O/serve-r$r.txt; el
done
kill -TERM $spid; wait $spid; echo "serve exit $?"; el
timeout 120 $L bench $P --batch 32 --prompt-tokens 128 -n 128 -c 256 --json $O/bench-w32.json > $O/bench-w32.txt 2>&1
echo "bench rc=$?"; grep -E "^\| 32" $O/bench-w32.txt; el
for w in 2 4 8 16 32 64; do
  [ $(($(date +%s) - t0)) -gt 540 ] && break
  timeout 40 $L bench $P --prompt-tokens $w -n 8 -c 256 > $O/bench-p$w.txt 2>&1
  echo "W=$w: $(grep -E '^\| ' $O/bench-p$w.txt | tail -1 | cut -d'|' -f2-5)"; el
done
tar -cJf $OUT/s9call2.txz -C $O . && rm -rf $O
