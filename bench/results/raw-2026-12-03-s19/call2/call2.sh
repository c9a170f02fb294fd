#!/bin/bash
# Session 19, call 2 (H200): the ring again, its block-table lookups now all
# issued before its copies (call 1's ring looked each up after the previous
# copy, and ran 2x slower at 16k). GPU tests of the attention paths;
# ls_bench_attention with 1, 2 (the default), 3 stage buffers, warps owning
# heads everywhere, and the form before (LS_ATTENTION_SPLIT_DOT=0); the 8b
# Q4_K_M after 4,000 and 16,000 tokens under each.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 200 $B/ls_gpu_tests -tc="cuda ops: attention*,cuda kv paged*,decode fused*,cuda attention*" > $O/gpu-tests.txt 2>&1; echo "tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt | tail -2; grep -B3 -A12 "ERROR\|FAILED" $O/gpu-tests.txt | head -30; el
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1
for f in s2 sd0 s1 s3 own1; do
  case $f in s2) e=LS_X=;; sd0) e=LS_ATTENTION_SPLIT_DOT=0;; s1) e=LS_ATTENTION_SLOTS=1;; s3) e=LS_ATTENTION_SLOTS=3;; own1) e=LS_ATTENTION_OWN=1;; esac
  echo "== $f ($e)" >> $O/bench-attention.txt
  env $e timeout 90 $B/ls_bench_attention 5 2>&1 | grep ctx >> $O/bench-attention.txt
done
cat $O/bench-attention.txt | cut -c1-200; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for pt in 4000 16000; do for f in s2 sd0 s3 own1; do
  case $f in s2) e=LS_X=;; sd0) e=LS_ATTENTION_SPLIT_DOT=0;; s1) e=LS_ATTENTION_SLOTS=1;; s3) e=LS_ATTENTION_SLOTS=3;; own1) e=LS_ATTENTION_OWN=1;; esac
  c=4096; [ $pt = 16000 ] && c=16384
  env $e timeout 120 $L bench -m $M/8b.gguf --prompt-tokens $pt -n 64 -c $c > $O/8b-p$pt-$f.txt 2>&1
  echo "8b prompt $pt $f (prefill | decode): $(tail -1 $O/8b-p$pt-$f.txt | cut -d'|' -f2-3)" | tee -a $O/8b.txt
done; done; el
date -u
