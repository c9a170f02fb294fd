#!/bin/bash
# Session 19, call 4 (H200): decode attention of long splits on tensor cores
# (kernels/attention_decode_tc.cuh) against the grouped kernel
# (LS_ATTENTION_TC=0). GPU tests of the attention paths; ls_bench_attention
# under each, and its split sweep; the 8b Q4_K_M after 4,000 and 16,000
# tokens under each.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 200 $B/ls_gpu_tests -tc="cuda ops: attention*,cuda kv paged*,decode fused*,cuda attention*" > $O/gpu-tests.txt 2>&1; echo "tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt | tail -2; grep -B5 -A15 "ERROR\|FAILED" $O/gpu-tests.txt | head -60; el
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1
for f in tc0 tc1; do
  echo "== $f" >> $O/bench-attention.txt
  LS_ATTENTION_TC=${f#tc} timeout 90 $B/ls_bench_attention 5 2>&1 | grep ctx >> $O/bench-attention.txt
done
timeout 120 $B/ls_bench_attention --splits 2>&1 | grep ctx > $O/bench-attention-splits.txt
cat $O/bench-attention.txt | cut -c1-200; cut -c1-250 $O/bench-attention-splits.txt; el
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for pt in 4000 16000; do for f in tc1 tc0; do
  c=4096; [ $pt = 16000 ] && c=16384
  LS_ATTENTION_TC=${f#tc} timeout 120 $L bench -m $M/8b.gguf --prompt-tokens $pt -n 64 -c $c > $O/8b-p$pt-$f.txt 2>&1
  echo "8b prompt $pt $f (prefill | decode): $(tail -1 $O/8b-p$pt-$f.txt | cut -d'|' -f2-3)" | tee -a $O/8b.txt
done; done; el
date -u
