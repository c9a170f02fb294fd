#!/bin/bash
# Session 12, call 4: call 3's llama.cpp part again (this llama.cpp takes -fa
# as a flag, not -fa 0|1), beside our default decode at the same depths.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b12; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
date -u; nvidia-smi -L; rm -rf $B/*; tar -xJf .gpubin/bin.txz -C $B || exit 2
tar -xJf .llama/lcpk.txz -C /tmp || exit 2
L=$B/layerstream
[ -f $M/8b-q4_k_m.gguf ] || timeout 90 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m
for fa in "" "-fa"; do
  LD_LIBRARY_PATH=/tmp/lcpk:$LD_LIBRARY_PATH timeout 150 /tmp/lcpk/llama-batched-bench -m $M/8b-q4_k_m.gguf -ngl 99 -c 16448 -b 2048 -ub 512 $fa -npp 1,1024,4096,16000 -ntg 64 -npl 1 > $O/llamacpp$fa.txt 2>&1
  grep -E "^\||error|usage" $O/llamacpp$fa.txt | head -12
done
for p in 1 1024 4096 16000; do
  echo "layerstream prompt $p: $(timeout 120 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens $p -n 64 -c 16384 2>&1 | tail -1 | cut -d'|' -f2-3)"
done | tee $O/ctx.txt
date -u
cd $OUT && tar cJf l.txz l
