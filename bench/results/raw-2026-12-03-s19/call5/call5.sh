#!/bin/bash
# Session 19, call 5 (H200): the tensor-core decode attention with RoPE and
# the KV store fused in and one split written out, so it can take every
# split. GPU tests; ls_bench_attention (its default is this kernel
# everywhere, max_pos unset) against LS_ATTENTION_TC=0; decodes as users run
# them, three settings interleaved: the default (tensor cores for long
# splits), LS_ATTENTION_TC=1 (everywhere), LS_ATTENTION_TC=0 (never):
# 8b Q4_K_M short, after 4,000 and 16,000 tokens; 70b Q4_K_M short and
# after 4,000 tokens.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 200 $B/ls_gpu_tests -tc="cuda ops: attention*,cuda kv paged*,decode fused*,cuda attention*,cuda backend: logits*,cuda backend: a 300*" > $O/gpu-tests.txt 2>&1; echo "tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt | tail -2; grep -B5 -A15 "ERROR\|FAILED" $O/gpu-tests.txt | head -60; el
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1 | tee $O/bound.txt
for f in x 0; do
  echo "== LS_ATTENTION_TC=$f" >> $O/bench-attention.txt
  LS_ATTENTION_TC=$f timeout 90 $B/ls_bench_attention 5 2>&1 | grep ctx >> $O/bench-attention.txt
done
cut -c1-200 $O/bench-attention.txt; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for r in 1 2; do for f in x 1 0; do
  echo "8b Hello TC=$f round $r: $(LS_ATTENTION_TC=$f timeout 60 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/decode.txt
done; done; el
for pt in 4000 16000; do for f in x 0; do
  c=4096; [ $pt = 16000 ] && c=16384
  LS_ATTENTION_TC=$f timeout 120 $L bench -m $M/8b.gguf --prompt-tokens $pt -n 64 -c $c > $O/b8-$pt-$f.txt 2>&1
  echo "8b prompt $pt TC=$f (prefill | decode): $(tail -1 $O/b8-$pt-$f.txt | cut -d'|' -f2-3)" | tee -a $O/decode.txt
done; done; el
rm -f $M/8b.gguf
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2; do for f in x 1 0; do
  echo "70b Hello TC=$f round $r: $(LS_ATTENTION_TC=$f timeout 60 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/decode.txt
done; done; el
for f in x 0; do
  LS_ATTENTION_TC=$f timeout 120 $L bench -m $M/70b.gguf --prompt-tokens 4000 -n 64 -c 4096 > $O/b70-4000-$f.txt 2>&1
  echo "70b prompt 4000 TC=$f (prefill | decode): $(tail -1 $O/b70-4000-$f.txt | cut -d'|' -f2-3)" | tee -a $O/decode.txt
done; el
date -u
