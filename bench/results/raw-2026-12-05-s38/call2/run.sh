#!/bin/bash
# Session 38, call 2: (1) the GPU's matmuls at 2-8 tokens, the GEMV against
# the int8 GEMM forced (ls_bench_matmul --widths 70b); (2) issue 14's CPU
# attention, blocks against spans, two rounds in alternated order, and a
# timeline at 1k; (3) the spans in the engine after a 4,096-token prompt.
# Run: OUT=$OUT LIMIT=500 bash bench/results/raw-2026-12-05-s38/call2/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-500}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
mkdir -p $B $M $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nproc; grep -m1 "model name" /proc/cpuinfo; nvidia-smi --query-gpu=name --format=csv,noheader; el
timeout 120 $B/ls_bench_matmul --widths 70b > $O/widths-70b.txt 2>&1; echo "widths rc=$?"; el
sed -E 's/ +/ /g' $O/widths-70b.txt | cut -c1-400
for sp in blocks,spans spans,blocks; do
  left 60 || break
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --split $sp --reps 41 > $O/attn-$sp.txt 2>&1
  echo "attention $sp rc=$?"; grep -E "^ +[0-9]+ +16 " $O/attn-$sp.txt | cut -c1-200; el
done
if left 40; then
  timeout 35 $B/ls_bench_cpu_attention --threads 16 --ctx 1024 --split blocks,spans --reps 201 --timeline > $O/attn-tl.txt 2>&1
  grep -E "^ +1024|timeline|first|spread" $O/attn-tl.txt | cut -c1-220; el
fi
F=$M/70b-q4km-tied.gguf
if left 120; then
  timeout 60 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
  # Where a CPU-tier layer's time goes at width 8 (LS_CPU_OP_TIMES), with the
  # copy engine beside it (hybrid) and without it (--backend cpu).
  LS_CPU_OP_TIMES=1 timeout 70 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --batch 8 --prompt-tokens 128 -n 32 -c 256 --stats > $O/ops-hybrid8.txt 2>&1
  echo "ops hybrid rc=$?"; grep -E "cpu op times|^\| [0-9]" $O/ops-hybrid8.txt | cut -c1-300; el
  left 100 && LS_CPU_OP_TIMES=1 timeout 90 $B/layerstream bench -m $F --backend cpu --batch 8 --prompt-tokens 8 -n 4 -c 64 > $O/ops-cpu8.txt 2>&1
  echo "ops cpu rc=$?"; grep -E "cpu op times|^\| [0-9]" $O/ops-cpu8.txt | cut -c1-300; el
  for v in 0 1; do
    left 60 || break
    LS_ATTN_SPANS=$v timeout 60 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 4096 -n 24 -c 4352 > $O/long-spans$v.txt 2>&1
    echo "long spans=$v rc=$?"; grep -E "^\| [0-9]" $O/long-spans$v.txt | tail -1 | cut -d"|" -f1-5; el
  done
fi
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
