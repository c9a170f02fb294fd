#!/bin/bash
# Session 30, call 7. The weight packers' software prefetch (the block 16
# on: LS_CPU_PACK_AHEAD=16, the default now) against none (=0): (1)
# ls_bench_cpu_matmul, 16 threads, 70b shapes, q4_K and q6_K, the GEMM at
# 8, 16 and 32 tokens in the lane form (the default: VNNI tile at 8, AMX
# from 16) and the chunk form; two rounds alternated. (2) The engine:
# synthetic 70b Q4_K_M at 24 GiB, bench --batch 8,32 (128-token prompts),
# ahead 16 against 0, alternated, lane form (default flags).
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $R/.ut && cd $R/.ut
timeout 120 $B/ls_unit_tests -tc="cpu_q8_chunks*,cpu_gemm_q8*" > $O/unit.txt 2>&1
echo "unit rc=$?"; grep -E "test cases|assertions|SKIPPED" $O/unit.txt; el
cd /tmp
m() { grep -E "^q[46]_K" $1 | tr -s ' ' | cut -d' ' -f1-4,6,15,19,21; }
for r in 1 2; do
  A="16 0"; [ $r = 2 ] && A="0 16"
  for a in $A; do
    LS_CPU_PACK_AHEAD=$a timeout 150 $B/ls_bench_cpu_matmul --threads 16 --ntok 8,16,32 --types q4_k,q6_k --act q8 --path gemm --form lanes,chunks --shapes 70b --reps 5 > $O/mm-$r-a$a.txt 2>&1
    echo "matmul round $r ahead $a rc=$?"; m $O/mm-$r-a$a.txt
  done
done; el
F=$M/70b.gguf
timeout 120 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m; echo "synth rc=$?"; el
for a in 16 0 16 0; do
  LS_CPU_PACK_AHEAD=$a timeout 200 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --batch 8,32 --prompt-tokens 128 -n 32 -c 256 --stats > $O/batch-a$a.txt 2>&1
  echo "batch ahead $a rc=$?"; grep -E "^\| [0-9]" $O/batch-a$a.txt | cut -d"|" -f1-5,15-20; grep -E "CPU tier by width" $O/batch-a$a.txt
done; el
cd $O && tar -czf mm.tgz mm-*.txt batch-*.txt unit.txt && rm -f mm-*.txt
