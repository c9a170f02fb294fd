#!/bin/bash
# Session 12, call 3: the committed default (v5 decode attention, splits by
# row length 8/16/32/64): GPU ops and backend tests, cuda vs cpu ids for the
# 15 types, the 8b Q4_K_M decode after 1 / 1k / 4k / 16k prompts against
# LS_ATTENTION_SPLITS=fixed and LS_ATTENTION_KERNEL=4, and llama.cpp's
# llama-batched-bench on the same file at the same depths (S_TG: decode
# tokens/s after the prompt), with and without flash attention.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b12; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
date -u; nvidia-smi -L; rm -rf $B/*; tar -xJf .gpubin/bin.txz -C $B || exit 2
tar -xJf .llama/lcpk.txz -C /tmp || exit 2
L=$B/layerstream
(cd /tmp && timeout 150 $B/ls_gpu_tests -tc="cuda ops*,cuda backend*" 2>&1 | tail -3) | tee $O/gpu-tests.txt
[ -f $M/8b-q4_k_m.gguf ] || timeout 90 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m
for r in 1 2; do
  for sw in default LS_ATTENTION_SPLITS=fixed LS_ATTENTION_KERNEL=4; do
    e=(); [ $sw = default ] || e=($sw)
    echo "round $r prompt Hello n=256 $sw: $(env "${e[@]}" timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | grep -o 'generated.*tok/s')"
    for p in 1024 4096 16000; do
      echo "round $r prompt $p $sw: $(env "${e[@]}" timeout 120 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens $p -n 64 -c 16384 2>&1 | tail -1 | cut -d'|' -f2-3)"
    done
  done
done | tee $O/ctx.txt
for fa in 0 1; do
  LD_LIBRARY_PATH=/tmp/lcpk:$LD_LIBRARY_PATH timeout 150 /tmp/lcpk/llama-batched-bench -m $M/8b-q4_k_m.gguf -ngl 99 -c 16448 -b 2048 -ub 512 -fa $fa -npp 1,1024,4096,16000 -ntg 64 -npl 1 2>&1 | grep -E "^\|" | tee $O/llamacpp-fa$fa.txt
done
for q in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m q5_k_m; do
  timeout 30 $L synth -q -o $M/tiny-$q.gguf --preset tiny --quant $q || { echo "$q synth failed"; continue; }
  a=$(timeout 30 $L decode -m $M/tiny-$q.gguf -p "The quick brown fox" -n 64 --temp 0 --ids --backend cpu --act f32 --no-display-prompt 2>/dev/null | tail -1)
  b=$(timeout 30 $L decode -m $M/tiny-$q.gguf -p "The quick brown fox" -n 64 --temp 0 --ids --backend cuda --act f32 --no-display-prompt 2>/dev/null | tail -1)
  [ -n "$a" ] && [ "$a" = "$b" ] && echo "$q: identical ($(echo $a | wc -w) ids)" || echo "$q: DIFFERENT"
done 2>&1 | tee $O/cuda_vs_cpu.txt
date -u
cd $OUT && tar cJf l.txz l
