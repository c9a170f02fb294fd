#!/bin/bash
# Session 19, call 7 (H200): the shipped default (3301954: the tensor-core
# decode attention for long splits) as users run it, beside the grouped
# kernel everywhere (LS_ATTENTION_TC=0). The whole GPU suite; 8b Q4_K_M and
# 70b Q4_K_M short and after 1,000 / 4,000 (8b also 16,000) tokens; the
# tensor-core kernel everywhere (LS_ATTENTION_TC=1) after 1,000 tokens.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 200 $B/ls_gpu_tests > $O/gpu-tests.txt 2>&1; echo "all GPU tests rc=$?"; grep -E "test cases|assertions" $O/gpu-tests.txt | tail -2; grep -B5 -A15 "ERROR\|FAILED" $O/gpu-tests.txt | head -40; el
timeout 60 $B/ls_bench_matmul --graph 2>&1 | grep -E "^bound" | head -1 | tee $O/bound.txt
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
bn() { tail -1 | cut -d'|' -f2-3; }
timeout 90 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m; el
for r in 1 2; do for f in x 0; do
  echo "8b Hello TC=$f round $r: $(LS_ATTENTION_TC=$f timeout 60 $L decode -m $M/8b.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/res.txt
done; done
for pt in 1000 4000 16000; do for f in x 0 1; do
  [ $f = 1 ] && [ $pt != 1000 ] && continue
  c=4096; [ $pt = 16000 ] && c=16384
  echo "8b prompt $pt TC=$f (prefill | decode): $(LS_ATTENTION_TC=$f timeout 120 $L bench -m $M/8b.gguf --prompt-tokens $pt -n 64 -c $c 2>&1 | bn)" | tee -a $O/res.txt
done; done; el
rm -f $M/8b.gguf
timeout 170 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2; do
  echo "70b Hello round $r: $(timeout 60 $L decode -m $M/70b.gguf -p Hello -n 128 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)" | tee -a $O/res.txt
done
for pt in 1000 4000; do for f in x 0 1; do
  [ $f = 1 ] && [ $pt != 1000 ] && continue
  echo "70b prompt $pt TC=$f (prefill | decode): $(LS_ATTENTION_TC=$f timeout 120 $L bench -m $M/70b.gguf --prompt-tokens $pt -n 64 -c 4096 2>&1 | bn)" | tee -a $O/res.txt
done; done; el
date -u
