#!/bin/bash
# Session 11, call 2: (A) CPU attention of one 70b layer at 1k-16k: what the
# scores loop prefetches (k1v2 default, none, k2v2, v2) x the next block's
# keys (0, 1), and the same bytes read with nothing computed (--read), twice;
# (B) resident 8b decode with the argmax-only greedy steps, beside llama.cpp
# (c392e50, built in session 10) on the same files; 16k context; a trace of
# 64 tokens for the step gaps.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b11; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; nvidia-smi -L
tar -xJf .gpubin/bin.txz -C $B && tar -xJf .llama/lcpk.txz -C /tmp || exit 2
L=$B/layerstream; LB=/tmp/lcpk; export LD_LIBRARY_PATH=$LB:$LD_LIBRARY_PATH
for r in 1 2; do
  timeout 150 $B/ls_bench_cpu_attention --threads 16 --reps 41 --ctx 1024,2048,4096,16384 \
    --prefetch k1v2,none,k2v2,v2 --next 0,1 --read 2>&1 | tee $O/attention-$r.txt | grep -E "^ +[0-9]"
done; el
for q in q4_k_m q8_0; do timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q; done; el
D="-p Hello -n 128 --temp 0 --no-display-prompt"
for r in 1 2 3; do for q in q4_k_m q8_0; do
  echo -n "round $r layerstream 8b $q: "; timeout 60 $L decode -m $M/8b-$q.gguf $D 2>&1 >/dev/null | grep -o "generated.*tok/s"
done; done
for q in q4_k_m q8_0; do timeout 90 $LB/llama-bench -m $M/8b-$q.gguf -ngl 99 -p 0 -n 128 -r 3 2>&1 | grep -E "tg|error"; done; el
timeout 60 $L decode -m $M/8b-q4_k_m.gguf $D --stats > /dev/null 2> $O/stats.txt; grep -E "stage|gpu-compute|^compute|sampler|generated" $O/stats.txt
timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 64 --temp 0 --no-display-prompt --trace $O/trace-8b.json > /dev/null 2>&1; ls -la $O/trace-8b.json
echo "16k:"; timeout 100 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 32 -c 16384 > $O/bench16k.txt 2>&1; grep -E "^\| [0-9]" $O/bench16k.txt; el
cd $O && xz -T8 trace-8b.json; cd - > /dev/null
tar -cJf $OUT/s11call2.txz -C $O . ; el
