#!/bin/bash
# Session 36, call 1: issue 17's own line first (the device time is short
# and starts fail often), then the GPU tests of the KV block table read by
# a kernel (session 35, never run on a device), then issue 14's CPU
# attention at 1k-16k while time is left.
#  (1) bench --batch 1,8,16,32,64 on the tied 70b Q4_K_M at 24 GiB, 128-token
#      prompts, 128 new tokens each, --stats (the bound at each width, the
#      CPU tier's host read beside the host probe);
#  (2) ls_gpu_tests: the step's inputs, streaming, batch pipeline, paged KV
#      and backend cases;
#  (3) ls_bench_cpu_attention, 16 threads, 1k-16k.
# Before them (~40 s): the direct tile with its slice loops unrolled (this
# binary) against the loops kept (ls_bench_cpu_matmul.old, built at
# e56fcbc), 8 tokens, from L2 on one thread and the 70b's shapes on 16.
# Run: OUT=$OUT LIMIT=560 bash bench/results/raw-2026-12-05-s36/call1/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-560}
mkdir -p $B $M
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
el
[ -x $B/layerstream ] || tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; lscpu | grep -E "Model name|^CPU\(s\)"
cd /tmp
mm() { grep -E "^q[456]_K" | awk '{printf "%s %s %s med %s max %s | ", $1, $2, $5, $15, $17}'; echo; }
for r in 1 2; do for v in .old ""; do
  echo "l2 round $r ${v:-new}: $(timeout 20 $B/ls_bench_cpu_matmul$v --threads 1 --ntok 8 --types q4_k,q6_k --act q8 --path gemm --direct on --shapes l2 --weights-gib 0 --reps 21 2>&1 | mm)"
done; done
for v in .old "" .old ""; do
  echo "70b ${v:-new}: $(timeout 40 $B/ls_bench_cpu_matmul$v --threads 16 --ntok 8 --types q4_k --act q8 --path gemm --direct on --shapes 70b --weights-gib 2 --reps 5 2>&1 | tee -a $O/mm.txt | mm)"
done; el
F=$M/70b-q4km-tied.gguf
[ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
cd /tmp
T=$((LIMIT - SECONDS - 130)); [ $T -gt 360 ] && T=360
timeout $T $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,16,32,64 --prompt-tokens 128 -n 128 -c 256 --stats > $O/batch.txt 2>&1
echo "batch rc=$?"; grep -E "^\| [0-9]|^\|.*width|bound|CPU tier by width" $O/batch.txt | cut -c1-260; el
mkdir -p $R/.ut && (cd $R/.ut && timeout $((LIMIT - SECONDS - 10)) $B/ls_gpu_tests -tc="cuda ops: a step*,cuda streaming*,cuda pipeline batch*,cuda kv paged*,cuda backend*" > $O/gpu.txt 2>&1)
echo "gpu tests rc=$?"; grep -E "test cases|assertions|ERROR|FAILED" $O/gpu.txt | head; el
if left 70; then
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --start claim,static --fold-pf off,on --reps 41 > $O/attn.txt 2>&1
  echo "attention rc=$?"; grep -E "^ +[0-9]+ +16 " $O/attn.txt | awk '{print $1, $5, $7, $10 " us", $15}'; el
fi
