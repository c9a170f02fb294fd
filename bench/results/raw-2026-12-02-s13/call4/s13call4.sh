#!/bin/bash
# Session 13, call 4: (a) the attention kernel's fused RoPE with its loads
# issued beside q's (call 3's form loaded them after a barrier: +2.4 us a
# call under ncu); (b) rmsnorm loads its weight before the PDL wait;
# (c) kernel 6, the grouped attention kernel with its value rows loaded 8 at
# a time (LS_ATTENTION_KERNEL=6), against 5 in ls_bench_attention and in
# decode after 4k and 16k prompts; (d) one v7 GEMV launch for a Q4_K_M
# layer's q, k (Q4_K) and v (Q6_K) (LS_GEMV_MIX=0: two launches). old/:
# call 3's binary. Then one token under ncu, and the whole GPU suite.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b13; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
el() { echo "--- $(date -u +%T)"; }
date -u; nvidia-smi -L; rm -rf $B/*; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
for q in q4_k_m q8_0; do [ -f $M/8b-$q.gguf ] || timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q; done; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | grep -o "[0-9.]* tok/s"; }
for r in 1 2 3; do
  for sw in default old LS_ATTENTION_KERNEL=6 LS_GEMV_MIX=0; do
    e=(); [ $sw = default ] || [ $sw = old ] || e=($sw); X=$L; [ $sw = old ] && X=$B/old/layerstream
    echo "8b q4_k_m round $r $sw: $(env "${e[@]}" timeout 60 $X decode -m $M/8b-q4_k_m.gguf -p Hello -n 256 --temp 0 --no-display-prompt 2>&1 >/dev/null | rate)"
  done
done | tee $O/ab.txt; el
timeout 100 $B/ls_bench_attention 5,6 2>&1 | tee $O/bench-attention.txt | grep -E "ctx|bound"; el
for r in 1 2; do for p in 4096 16000; do for sw in default LS_ATTENTION_KERNEL=6 old; do
  e=(); [ $sw = default ] || [ $sw = old ] || e=($sw); X=$L; [ $sw = old ] && X=$B/old/layerstream
  echo "round $r prompt $p $sw: $(env "${e[@]}" timeout 120 $X bench -m $M/8b-q4_k_m.gguf --prompt-tokens $p -n 64 -c 16384 2>&1 | tail -1 | cut -d'|' -f2-3)"
done; done; done | tee $O/ctx.txt; el
LS_CUDA_GRAPHS=0 timeout 100 /usr/local/cuda/bin/ncu --clock-control none --csv \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum --launch-skip 2000 --launch-count 400 \
  $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 12 --temp 0 --no-display-prompt > $O/ncu-q4km.csv 2> $O/ncu.err
echo "ncu rc=$?"; python3 bench/results/raw-2026-12-02-s10/ncu_table.py $O/ncu-q4km.csv | tee $O/ncu-table.txt | head -16; el
(cd /tmp && timeout 300 $B/ls_gpu_tests > $O/gpu-all.txt 2>&1; echo "rc $?" >> $O/gpu-all.txt)
grep -v MESSAGE $O/gpu-all.txt | grep -B3 -A12 -iE "error|threw|crash|signal|rc [1-9]" | head -40
tail -4 $O/gpu-all.txt; el
date -u
cd $OUT && tar cJf l.txz l
