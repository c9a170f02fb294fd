#!/bin/bash
# Session 47 call 2: the tensor-core decode attention with q's and p's hi and
# lo halves packed in one mma's columns where a KV head has <= 4 query heads
# (the 8b), against the unpacked form (LS_ATTENTION_TC_PACK=0), interleaved:
# the kernel alone at 1k-32k (ls_bench_attention 5 --shape 8b), the 8b Q4_K_M
# decode after 4,000 and 16,000 tokens; first the GPU tests of the attention
# kernels (both forms) and the fused decode.
# Run: OUT=$OUT LIMIT=400 bash bench/results/raw-2026-12-06-s47/call2/run.sh $PWD
# (carry .gpubin/extra.txz only: layerstream, ls_gpu_tests and
# ls_bench_attention built at the change)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-400}
. "$R/scripts/gpu_call_lib.sh"
mkdir -p "$B" "$M" "$O"; tar -xJf "$R/.gpubin/extra.txz" -C "$B" || exit 2
nvidia-smi --query-gpu=name --format=csv,noheader; el
L=$B/layerstream
rate() { grep -E "^\| [0-9]" "$1" | tail -1 | awk -F'|' '{print $2, $3, $(NF-3)}'; }
(cd $R && timeout 150 $B/ls_gpu_tests -tc="cuda ops: attention*,cuda ops: the tensor-core*,decode fused*" > $O/tests.txt 2>&1)
echo "GPU tests rc=$?"; grep -E "test cases|assertions|Status|ERROR|FAILED" $O/tests.txt | head -8; el; pack
for r in 1 2; do for pk in 1 0; do
  LS_ATTENTION_TC_PACK=$pk timeout 60 $B/ls_bench_attention 5 --shape 8b > $O/attn-$pk-$r.txt 2>&1
  echo "pack=$pk round $r:"; grep -E "ctx" $O/attn-$pk-$r.txt | sed -E 's/\| k5tc fix.*\| k5tc dyn/| dyn/' | cut -c1-120
done; done; el; pack
timeout 60 $L synth -q -o $M/8b.gguf --preset 8b --quant q4_k_m > /dev/null 2>&1; echo "synth rc=$?"
for r in 1 2; do for pk in 1 0; do for pt in 4000 16000; do
  LS_ATTENTION_TC_PACK=$pk timeout 100 $L bench -m $M/8b.gguf --prompt-tokens $pt -n 64 -c 16384 > $O/b8-$pt-$pk-$r.txt 2>&1
  echo "8b after $pt pack=$pk round $r: $(rate $O/b8-$pt-$pk-$r.txt)"
done; done; done; el
finish
