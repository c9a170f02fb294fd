#!/bin/bash
# Session 13, call 2: fewer kernels a decode layer and the GEMV's weights
# fetched while the kernel before it runs. New: (a) the direct GEMV
# prefetches each warp's first tile to L2 before its PDL wait
# (LS_GEMV_PREFETCH=0 turns it off); (b) the attention kernel writes the o
# GEMV's 8-bit x (no quantize launch); (c) RoPE and the KV store inside the
# attention kernel for one token (LS_ATTENTION_ROPE=0: the rope_kv launch);
# (d) argmax as a cluster of 8 blocks a row. old/: the binary of d6a6b3c.
# The GPU tests of what changed, cuda vs cpu ids (15 types, --act f32), the
# decode A/B, after 4k/16k prompts, and one token under ncu.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b13; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; rm -rf $B/*; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
(cd /tmp && timeout 200 $B/ls_gpu_tests -tc="decode fused*,cuda ops*,*paged*,cuda matmul: gemv v5*,cuda attention*" > $O/gpu-tests.txt 2>&1; echo "rc $?" >> $O/gpu-tests.txt)
grep -v MESSAGE $O/gpu-tests.txt | grep -B3 -A10 -iE "error|threw|crash|signal" | head -40; tail -4 $O/gpu-tests.txt; el
for q in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m q5_k_m; do
  timeout 30 $L synth -q -o $M/tiny-$q.gguf --preset tiny --quant $q || { echo "$q synth failed"; continue; }
  a=$(timeout 30 $L decode -m $M/tiny-$q.gguf -p "The quick brown fox" -n 64 --temp 0 --ids --backend cpu --act f32 --no-display-prompt 2>/dev/null | tail -1)
  b=$(timeout 30 $L decode -m $M/tiny-$q.gguf -p "The quick brown fox" -n 64 --temp 0 --ids --backend cuda --act f32 --no-display-prompt 2>/dev/null | tail -1)
  [ -n "$a" ] && [ "$a" = "$b" ] && echo "$q: identical ($(echo $a | wc -w) ids)" || echo "$q: DIFFERENT"
done 2>&1 | tee $O/cuda_vs_cpu.txt | tr '\n' ' '; echo; el
for q in q4_k_m q8_0; do [ -f $M/8b-$q.gguf ] || timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q; done; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | grep -o "[0-9.]* tok/s"; }
for r in 1 2 3; do
  for sw in default LS_GEMV_PREFETCH=0 LS_ATTENTION_ROPE=0 old; do
    e=(); [ $sw = default ] || [ $sw = old ] || e=($sw); X=$L; [ $sw = old ] && X=$B/old/layerstream
    echo "8b q4_k_m round $r $sw: $(env "${e[@]}" timeout 60 $X decode -m $M/8b-q4_k_m.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
  done
  for X in $L $B/old/layerstream; do
    echo "8b q8_0 round $r $X: $(timeout 60 $X decode -m $M/8b-q8_0.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
  done
done | tee $O/ab.txt; el
for r in 1 2; do for p in 4096 16000; do for X in $L $B/old/layerstream; do
  echo "round $r prompt $p $X: $(timeout 120 $X bench -m $M/8b-q4_k_m.gguf --prompt-tokens $p -n 64 -c 16384 2>&1 | tail -1 | cut -d'|' -f2-3)"
done; done; done | tee $O/ctx.txt; el
$L decode -m $M/8b-q4_k_m.gguf -p Hello -n 64 --temp 0 --no-display-prompt --stats 2>&1 >/dev/null | grep -E "^gpu-compute|^sampler" | tee $O/stats.txt
LS_CUDA_GRAPHS=0 timeout 150 /usr/local/cuda/bin/ncu --clock-control none --csv \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum --launch-skip 2000 --launch-count 400 \
  $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 12 --temp 0 --no-display-prompt > $O/ncu-q4km.csv 2> $O/ncu.err
echo "ncu rc=$?"; python3 bench/results/raw-2026-12-02-s10/ncu_table.py $O/ncu-q4km.csv | tee $O/ncu-table.txt | head -24; el
date -u
cd $OUT && tar cJf l.txz l
