#!/bin/bash
# Session 11, call 7: the session's last binary, cuda vs cpu greedy ids
# (decode --ids -n 64 --act f32) on a tiny model of each of the 15 types.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/m11; B=/tmp/b11; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
for q in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m q5_k_m; do
  timeout 30 $L synth -q -o $M/tiny-$q.gguf --preset tiny --quant $q || { echo "$q synth failed"; continue; }
  a=$(timeout 30 $L decode -m $M/tiny-$q.gguf -p "The quick brown fox" -n 64 --temp 0 --ids --backend cpu --act f32 --no-display-prompt 2>/dev/null | tail -1)
  b=$(timeout 30 $L decode -m $M/tiny-$q.gguf -p "The quick brown fox" -n 64 --temp 0 --ids --backend cuda --act f32 --no-display-prompt 2>/dev/null | tail -1)
  [ -n "$a" ] && [ "$a" = "$b" ] && echo "$q: identical ($(echo $a | wc -w) ids)" || echo "$q: DIFFERENT"
done 2>&1 | tee $O/cuda_vs_cpu.txt
