#!/bin/bash
# Session 18, call 4 (H200): the shipped default as users run it. The 8b
# Q8_0 beside the old attention form, and the 70b Q4_K_M after prompts of
# 1,000 and 4,000 tokens (bench: prefill, then 64 decoded tokens), whose
# bound counts the KV bytes too.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1 | tee $O/bound.txt
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 90 $L synth -q -o $M/8bq8.gguf --preset 8b --quant q8_0; el
for r in 1 2; do for own in 1 0; do
  echo "8b q8_0 own=$own round $r: $(LS_ATTENTION_OWN=$own timeout 60 $L decode -m $M/8bq8.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/8bq8.txt
done; done; el
rm -f $M/8bq8.gguf
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
echo "70b Hello: $(timeout 80 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/70b.txt
for pt in 1000 4000; do
  timeout 150 $L bench -m $M/70b.gguf --prompt-tokens $pt -n 64 -c 4096 > $O/70b-p$pt.txt 2>&1
  echo "70b prompt $pt (prefill tok/s | decode tok/s): $(tail -1 $O/70b-p$pt.txt | cut -d'|' -f2-3)" | tee -a $O/70b.txt
done; el
date -u
