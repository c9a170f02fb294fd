#!/bin/bash
# Session 19, call 6 (H200): the tensor-core decode attention's tiles in
# flight (LS_ATTENTION_TC_STAGES=1, 2 the default, 3) and its shared-memory
# carveout (LS_ATTENTION_TC_CARVEOUT=0: left to the driver), in
# ls_bench_attention at 4k-32k and in the 8b Q4_K_M's decode after 4,000 and
# 16,000 tokens, and short with the kernel everywhere (LS_ATTENTION_TC=1).
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 120 $B/ls_gpu_tests -tc="cuda ops: attention*,decode fused*" > $O/gpu-tests.txt 2>&1; echo "tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt | tail -2
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1
for v in "s2" "s1 LS_ATTENTION_TC_STAGES=1" "s3 LS_ATTENTION_TC_STAGES=3" "c0 LS_ATTENTION_TC_CARVEOUT=0" "s1c0 LS_ATTENTION_TC_STAGES=1 LS_ATTENTION_TC_CARVEOUT=0"; do
  set -- $v; tag=$1; shift
  for c in 4096 16384 32768; do echo "$tag $(env X=1 "$@" timeout 60 $B/ls_bench_attention 5 --ctx $c 2>&1 | grep ctx | cut -d'|' -f3 | tr '\n' ' ')" >> $O/bench.txt; done
done
cat $O/bench.txt; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for pt in 4000 16000; do for v in "s2" "s1 LS_ATTENTION_TC_STAGES=1" "s3 LS_ATTENTION_TC_STAGES=3" "c0 LS_ATTENTION_TC_CARVEOUT=0" "tc0 LS_ATTENTION_TC=0"; do
  set -- $v; tag=$1; shift
  c=4096; [ $pt = 16000 ] && c=16384
  env X=1 "$@" timeout 120 $L bench -m $M/8b.gguf --prompt-tokens $pt -n 64 -c $c > $O/b8-$pt-$tag.txt 2>&1
  echo "8b prompt $pt $tag (prefill | decode): $(tail -1 $O/b8-$pt-$tag.txt | cut -d'|' -f2-3)" | tee -a $O/decode.txt
done; done; el
for v in "dflt" "tc1 LS_ATTENTION_TC=1" "tc1c0 LS_ATTENTION_TC=1 LS_ATTENTION_TC_CARVEOUT=0" "tc1s1c0 LS_ATTENTION_TC=1 LS_ATTENTION_TC_CARVEOUT=0 LS_ATTENTION_TC_STAGES=1"; do
  set -- $v; tag=$1; shift
  echo "8b Hello $tag: $(env X=1 "$@" timeout 60 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/decode.txt
done; el
date -u
