#!/bin/bash
# Session 10, call 6: issue 20's figures with the session's last binary, beside
# llama.cpp (c392e50, built in call 1) on the same files in this call:
# resident 8b Q4_K_M and Q8_0, the 70b Q4_K_M fully resident, 16k context,
# the stall table, and cuda vs cpu greedy ids for the 15 types (--act f32).
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/m10; B=/tmp/b10; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; nvidia-smi -L; tar -xJf .gpubin/bin.txz -C $B && tar -xJf .llama/lcpk.txz -C /tmp || exit 2
L=$B/layerstream; LB=/tmp/lcpk
export LD_LIBRARY_PATH=$LB:$LD_LIBRARY_PATH
for q in q4_k_m q8_0; do timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q; done; el
D="-p Hello -n 128 --temp 0 --no-display-prompt"
for r in 1 2 3; do
  for q in q4_k_m q8_0; do
    echo -n "round $r layerstream 8b $q: "; timeout 60 $L decode -m $M/8b-$q.gguf $D 2>&1 >/dev/null | tail -1 | grep -o "generated.*tok/s"
  done
done
for q in q4_k_m q8_0; do timeout 90 $LB/llama-bench -m $M/8b-$q.gguf -ngl 99 -p 0 -n 128 -r 3 2>&1 | grep -E "tg|error"; done; el
timeout 60 $L decode -m $M/8b-q4_k_m.gguf $D --stats > /dev/null 2> $O/stats.txt; grep -E "gpu-compute|^compute|sampler|generated" $O/stats.txt
echo "16k:"; timeout 100 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 32 -c 16384 > $O/bench16k.txt 2>&1; grep -E "^\| [0-9]" $O/bench16k.txt; el
echo "== cuda vs cpu greedy ids, tiny, 64 steps, --act f32"
for q in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m q5_k_m; do
  timeout 30 $L synth -q -o $M/tiny-$q.gguf --preset tiny --quant $q || { echo "$q synth failed"; continue; }
  a=$(timeout 30 $L decode -m $M/tiny-$q.gguf -p "The quick brown fox" -n 64 --temp 0 --ids --backend cpu --act f32 --no-display-prompt 2>/dev/null | tail -1)
  b=$(timeout 30 $L decode -m $M/tiny-$q.gguf -p "The quick brown fox" -n 64 --temp 0 --ids --backend cuda --act f32 --no-display-prompt 2>/dev/null | tail -1)
  [ -n "$a" ] && [ "$a" = "$b" ] && echo "$q: identical ($(echo $a | wc -w) ids)" || echo "$q: DIFFERENT"
done 2>&1 | tee $O/cuda_vs_cpu.txt | tr '\n' ';'; echo; el
rm -f $M/8b-q8_0.gguf $M/tiny-*.gguf
if [ $(($(date +%s) - t0)) -lt 250 ]; then
  timeout 100 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
  for r in 1 2; do echo -n "layerstream 70b resident: "; timeout 90 $L decode -m $M/70b.gguf -p Hello -n 64 --temp 0 --no-display-prompt 2>&1 >/dev/null | tail -1 | grep -o "generated.*tok/s\|error.*"; done; el
  timeout 150 $LB/llama-bench -m $M/70b.gguf -ngl 99 -p 0 -n 64 -r 2 2>&1 | grep -E "tg|error"; el
fi
tar -cJf $OUT/s10call6.txz -C $O . ; el
