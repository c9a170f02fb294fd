#!/bin/bash
# Session 12, call 2: the split count for the v5 decode attention
# (ls_bench_attention --splits), decode after 1k / 4k / 16k prompts with the
# fixed and the dynamic splits (two rounds), and the whole GPU suite's log
# (call 1 had one failed case and no failed assertion).
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b12; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
date -u; nvidia-smi -L; rm -rf $B/*; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 120 $B/ls_bench_attention --splits 2>&1 | tee $O/bench-splits.txt
[ -f $M/8b-q4_k_m.gguf ] || timeout 90 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m
for r in 1 2; do for p in 1024 4096 16000; do
  for sw in default LS_ATTENTION_SPLITS=dynamic; do
    e=(); [ $sw = default ] || e=($sw)
    echo "round $r prompt $p $sw: $(env "${e[@]}" timeout 120 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens $p -n 64 -c 16384 2>&1 | tail -1 | cut -d'|' -f2-3)"
  done
done; done | tee $O/ctx.txt
(cd /tmp && timeout 300 $B/ls_gpu_tests > $O/gpu-all.txt 2>&1; echo "rc $?" >> $O/gpu-all.txt)
grep -v MESSAGE $O/gpu-all.txt | grep -B3 -A12 -iE "error|threw|crash|signal|rc [1-9]" | head -60
tail -4 $O/gpu-all.txt
date -u
cd $OUT && tar cJf l.txz l
