#!/bin/bash
# Session 20, call 1 (H200): session 19's untested code. GPU tests of the
# oracle fix (659923c), the paged tc_table test and the TC default's edges;
# ls_bench_attention with LS_ATTENTION_TC_TABLE=0|1 and the split sweep;
# 8b Q4_K_M decode after 600 / 1,000 / 4,000 / 16,000 tokens, the default
# beside LS_ATTENTION_TC=0 and LS_ATTENTION_TC_TABLE=1.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 200 $B/ls_gpu_tests -tc="cuda pipeline batch*,cuda kv paged*,cuda ops: attention*,decode fused*" > $O/gpu-tests.txt 2>&1
echo "filtered GPU tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt | tail -2; grep -B5 -A15 "ERROR\|FAILED" $O/gpu-tests.txt | head -60; el
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1 | tee $O/bound.txt
for tt in 0 1 0 1; do echo "TC_TABLE=$tt"; LS_ATTENTION_TC_TABLE=$tt timeout 60 $B/ls_bench_attention 5 2>&1 | grep ctx; done > $O/bench-attention.txt 2>&1
timeout 90 $B/ls_bench_attention --splits --shape 8b > $O/bench-splits.txt 2>&1; el
bn() { tail -1 | cut -d'|' -f2-3; }
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for r in 1 2; do for pt in 600 1000 4000; do for f in d 0 t; do
  e="LS_ATTENTION_TC=x"; [ $f = 0 ] && e="LS_ATTENTION_TC=0"; [ $f = t ] && e="LS_ATTENTION_TC_TABLE=1"
  echo "8b prompt $pt $f r$r (prefill | decode): $(env $e timeout 90 $L bench -m $M/8b.gguf --prompt-tokens $pt -n 64 -c 4096 2>&1 | bn)" | tee -a $O/res.txt
done; done; done; el
for f in d 0 t; do
  e="LS_ATTENTION_TC=x"; [ $f = 0 ] && e="LS_ATTENTION_TC=0"; [ $f = t ] && e="LS_ATTENTION_TC_TABLE=1"
  echo "8b prompt 16000 $f (prefill | decode): $(env $e timeout 120 $L bench -m $M/8b.gguf --prompt-tokens 16000 -n 64 -c 16384 2>&1 | bn)" | tee -a $O/res.txt
done; el
date -u
