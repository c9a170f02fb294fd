#!/bin/bash
# Session 12, call 1: decode attention v5 (16-byte value loads, two positions
# a thread; the v4 kernel used 255 registers and spilled) and the parallel
# reduce, against v4 and v3; the dynamic splits (LS_ATTENTION_SPLITS=dynamic,
# written in session 11, never run). GPU tests first, then the attention
# micro-bench, the 8b decode A/B at 256 tokens and after 1k/4k/16k prompts,
# and cuda vs cpu greedy ids for the 15 types.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b12; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
(cd /tmp && timeout 120 $B/ls_gpu_tests -tc="cuda ops*" 2>&1 | grep -E "attention|FAIL|ERROR|test cases|assertions" | tail -30) | tee $O/gpu-ops.txt
timeout 150 $B/ls_bench_attention 3,4,5 2>&1 | tee $O/bench-attention.txt
(cd /tmp && timeout 200 $B/ls_gpu_tests 2>&1 | tail -4) | tee $O/gpu-all.txt
BIN=$B OUT=$O N=256 ROUNDS=2 SWITCHES="default LS_ATTENTION_KERNEL=4 LS_ATTENTION_SPLITS=dynamic" timeout 200 scripts/gpu_decode_ab.sh q4_k_m
for p in 1024 4096 16000; do
  for sw in default LS_ATTENTION_KERNEL=4 LS_ATTENTION_SPLITS=dynamic; do
    e=(); [ $sw = default ] || e=($sw)
    echo "prompt $p $sw: $(env "${e[@]}" timeout 120 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens $p -n 32 -c 16384 2>&1 | tail -1)"
  done
done | tee $O/ctx.txt
for q in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m q5_k_m; do
  timeout 30 $L synth -q -o $M/tiny-$q.gguf --preset tiny --quant $q || { echo "$q synth failed"; continue; }
  a=$(timeout 30 $L decode -m $M/tiny-$q.gguf -p "The quick brown fox" -n 64 --temp 0 --ids --backend cpu --act f32 --no-display-prompt 2>/dev/null | tail -1)
  b=$(timeout 30 $L decode -m $M/tiny-$q.gguf -p "The quick brown fox" -n 64 --temp 0 --ids --backend cuda --act f32 --no-display-prompt 2>/dev/null | tail -1)
  [ -n "$a" ] && [ "$a" = "$b" ] && echo "$q: identical ($(echo $a | wc -w) ids)" || echo "$q: DIFFERENT"
done 2>&1 | tee $O/cuda_vs_cpu.txt
date -u
cd $OUT && tar cJf l.txz l
