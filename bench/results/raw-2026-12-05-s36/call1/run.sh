#!/bin/bash
# Session 36, call 1 (device time short: starts failed most of the session).
# In order, each part only while LIMIT seconds last, its output kept as it ends:
#  (1) issue 17's line: bench --batch 32 on the tied 70b Q4_K_M at 24 GiB,
#      128-token prompts, 128 new tokens each, --stats (the bound at that
#      width, the CPU tier's host read beside the host probe);
#  (2) the GPU tests of the KV block table read by a kernel (session 35,
#      never run on a device): step inputs, streaming, batch pipeline,
#      paged KV and backend cases;
#  (3) the line's other widths, 64, 16, 8, 1, one bench each;
#  (4) the direct tile with its slice loops unrolled (this binary) against
#      the loops kept (ls_bench_cpu_matmul.old, built at e56fcbc), 8 tokens,
#      from L2 on one thread and the 70b's shapes on 16;
#  (5) issue 14's CPU attention at 1k-16k.
# Run: OUT=$OUT LIMIT=480 bash bench/results/raw-2026-12-05-s36/call1/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-480}
mkdir -p $B $M
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
el
[ -x $B/layerstream ] || tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; lscpu | grep -E "Model name|^CPU\(s\)"
F=$M/70b-q4km-tied.gguf
[ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
cd /tmp
width() {  # width, seconds it needs
  left $2 || { echo "width $1: no time left"; return; }
  timeout $(( $2 + 30 )) $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --batch $1 --prompt-tokens 128 -n 128 -c 256 --stats > $O/batch-$1.txt 2>&1
  echo "width $1 rc=$?"; grep -E "^\| [0-9]|CPU tier by width|^bound:|^tier plan" $O/batch-$1.txt | cut -c1-400; el
}
width 32 100
if left 100; then
  mkdir -p $R/.ut && (cd $R/.ut && timeout 120 $B/ls_gpu_tests -tc="cuda ops: a step*,cuda streaming*,cuda pipeline batch*,cuda kv paged*,cuda backend*" > $O/gpu.txt 2>&1)
  echo "gpu tests rc=$?"; grep -E "test cases|assertions|ERROR|FAILED" $O/gpu.txt | head; el
fi
width 64 110
width 16 75
width 8 70
width 1 60
mm() { grep -E "^q[456]_K" | awk '{printf "%s %s %s med %s max %s | ", $1, $2, $5, $15, $17}'; echo; }
if left 60; then
  for r in 1 2; do for v in .old ""; do
    echo "l2 round $r ${v:-new}: $(timeout 20 $B/ls_bench_cpu_matmul$v --threads 1 --ntok 8 --types q4_k,q6_k --act q8 --path gemm --direct on --shapes l2 --weights-gib 0 --reps 21 2>&1 | mm)"
  done; done
  for v in .old "" .old ""; do
    left 25 && echo "70b ${v:-new}: $(timeout 40 $B/ls_bench_cpu_matmul$v --threads 16 --ntok 8 --types q4_k --act q8 --path gemm --direct on --shapes 70b --weights-gib 2 --reps 5 2>&1 | tee -a $O/mm.txt | mm)"
  done; el
fi
if left 70; then
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --start claim,static --fold-pf off,on --reps 41 > $O/attn.txt 2>&1
  echo "attention rc=$?"; grep -E "^ +[0-9]+ +16 " $O/attn.txt | awk '{print $1, $5, $7, $10 " us", $15}'; el
fi
