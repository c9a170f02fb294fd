#!/bin/bash
# Session 11, call 3: (A) ls_bench_matmul with v6's 2- and 8-rows-per-block
# variants (issue 20: the Q4_K/Q6_K GEMVs at 0.4-0.55 of the bandwidth);
# (B) CPU attention: the key prefetch distance (8, 24, 64 rows) into L1 or
# L2, and the read-only bound, twice (issue 14); (C) resident 8b decode's
# stall table with the embedding and head now spans of the gpu-compute track.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b11; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; nvidia-smi -L
tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 300 $B/ls_bench_matmul $O/matmul.json > $O/matmul.txt 2>&1; echo "matmul rc=$?"
grep -E "^bound|graph x20" $O/matmul.txt; el
for r in 1 2; do
  timeout 150 $B/ls_bench_cpu_attention --threads 16 --reps 41 --ctx 1024,2048,4096,16384 \
    --prefetch k1v2,k2v2 --ahead 8,24,64 --read 2>&1 | tee $O/attention-$r.txt | grep -E "^ +[0-9]"
done; el
[ -f $M/8b-q4_k_m.gguf ] || timeout 90 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m
D="-p Hello -n 128 --temp 0 --no-display-prompt"
for r in 1 2; do echo -n "8b q4_k_m: "; timeout 60 $L decode -m $M/8b-q4_k_m.gguf $D 2>&1 >/dev/null | grep -o "generated.*tok/s"; done
timeout 60 $L decode -m $M/8b-q4_k_m.gguf $D --stats > /dev/null 2> $O/stats.txt; grep -E "gpu-compute|^compute|sampler|bound" $O/stats.txt
timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 32 --temp 0 --no-display-prompt --trace $O/trace-8b.json > /dev/null 2>&1; xz -T4 $O/trace-8b.json; el
tar -cJf $OUT/s11call3.txz -C $O . ; el
