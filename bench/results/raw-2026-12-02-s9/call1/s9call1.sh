#!/bin/bash
# Session 9, call 1: issue 19's GPU line (32 streaming clients against
# `bench --batch 32`, same file, same call), issue 18's 70b skip bytes and
# the verify step's cost at widths 32 and 64.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/m9; B=/tmp/b9; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/s9bin1.txz -C $B || exit 2
L=$B/layerstream
timeout 60 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
P="-m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB"
# A. bench --batch 32, 128-token prompts, 128 new tokens each.
timeout 120 $L bench $P --batch 32 --prompt-tokens 128 -n 128 -c 256 --json $O/bench-w32.json > $O/bench-w32.txt 2>&1
echo "bench rc=$?"; grep -E "^\||tier plan|error" $O/bench-w32.txt | head -8; el
# B. the server, the same plan; two rounds of 32 clients (the first warms).
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
  echo "round $r rc=$?"; grep -E "decode_tok_s|tok_s_all_in|ttft_p50|itl_p50|FAIL" $O/serve-r$r.txt; el
done
curl -s $url/metrics | grep -E "^layerstream_(tokens_generated|requests_finished|kv_blocks)" > $O/metrics.txt
kill -TERM $spid; wait $spid; echo "serve exit $?"; tail -2 $O/serve.log; el
# C. layer skip on the 70b: the plan's bytes a step with and without 3 layers.
D="$P -p Once_upon_a_time --temp 0 --ids --no-display-prompt"
timeout 50 $L decode $D -n 2 > /dev/null 2> $O/plan-full.txt
timeout 50 $L decode $D -n 2 --skip-layers 10,40,70 > /dev/null 2> $O/plan-skip.txt
grep -E "layer skip|tier plan|per step|used" $O/plan-full.txt $O/plan-skip.txt; el
# D. the verify step at widths 32 and 64 (replay of the plain run, K fixed).
[ $(($(date +%s) - t0)) -gt 430 ] && { echo "no time for D"; tar -cJf $OUT/s9call1.txz -C $O . && rm -rf $O; exit 0; }
timeout 70 $L decode $D -n 128 > $O/plain.txt 2> $O/plain.err; tail -1 $O/plain.txt > $M/ids.txt
grep generated $O/plain.err; el
for k in 31 63; do
  timeout 60 $L decode $D -n 128 --draft replay:$M/ids.txt:1 --draft-min $k --draft-max $k > $O/k$k.txt 2> $O/k$k.err
  echo "K=$k: $(grep -E 'generated' $O/k$k.err | sed 's/.*generated/generated/') | $(grep speculative $O/k$k.err)"; el
done
tar -cJf $OUT/s9call1.txz -C $O . && rm -rf $O; ls -la $OUT
