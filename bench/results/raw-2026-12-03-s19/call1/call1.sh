#!/bin/bash
# Session 19, call 1 (H200): the decode attention's ring (long splits in
# sub-ranges of 64 positions staged in two shared buffers; split_dot) against
# the form before (LS_ATTENTION_SPLIT_DOT=0). GPU tests of the touched paths
# (and session 18's pending attention test), ls_bench_attention under each
# form (and warps owning heads everywhere: LS_ATTENTION_OWN=1), then the 8b
# Q4_K_M as users run it: short, after 4,000 and after 16,000 tokens.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 200 $B/ls_gpu_tests -tc="cuda ops: attention*,cuda kv paged*,decode fused*,cuda backend*,cuda attention*" > $O/gpu-tests.txt 2>&1; echo "tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt | tail -2; grep -B3 -A12 "ERROR\|FAILED" $O/gpu-tests.txt | head -40; el
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1 | tee $O/bound.txt
for f in dflt sd0 own1; do
  case $f in dflt) e=;; sd0) e=LS_ATTENTION_SPLIT_DOT=0;; own1) e=LS_ATTENTION_OWN=1;; esac
  env $e timeout 90 $B/ls_bench_attention 5 > $O/bench-attention-$f.txt 2>&1
done
timeout 120 $B/ls_bench_attention --splits > $O/bench-attention-splits.txt 2>&1
grep -h "ctx" $O/bench-attention-{dflt,sd0,own1}.txt | cut -c1-200; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for r in 1 2; do for sd in 1 0; do
  echo "8b Hello split_dot=$sd round $r: $(LS_ATTENTION_SPLIT_DOT=$sd timeout 60 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/8b.txt
done; done; el
for pt in 4000 16000; do for sd in 1 0; do
  c=4096; [ $pt = 16000 ] && c=16384
  LS_ATTENTION_SPLIT_DOT=$sd timeout 120 $L bench -m $M/8b.gguf --prompt-tokens $pt -n 64 -c $c > $O/8b-p$pt-sd$sd.txt 2>&1
  echo "8b prompt $pt split_dot=$sd (prefill | decode): $(tail -1 $O/8b-p$pt-sd$sd.txt | cut -d'|' -f2-3)" | tee -a $O/8b.txt
done; done; el
date -u
