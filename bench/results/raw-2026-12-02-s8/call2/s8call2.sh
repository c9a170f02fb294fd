#!/bin/bash
# Session 8, call 2: the AMX GEMM packing in natural order and pipelined
# (tile unit one step ahead of the float step); 70b batch at widths 32, 64.
set -u
O=$OUT; M=/tmp/m8; B=/tmp/b8; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; tar -xJf .gpubin/s8bin2.txz -C $B || exit 2
timeout 120 $B/ls_unit_tests -tc="cpu_gemm_q8*,pipeline batch*" > $O/unit.txt 2>&1; echo "unit rc=$?"; tail -3 $O/unit.txt; grep -c "SKIPPED: amx" $O/unit.txt; el
timeout 150 $B/ls_bench_cpu_matmul --threads 16 --ntok 8,16,32,64 --types q4_k,q6_k --act q8 --path gemm --amx off,on --shapes 70b --reps 5 --weights-gib 4 > $O/bench-cpu-gemm.txt 2>&1; echo "cpu bench rc=$?"; grep -E "^q" $O/bench-cpu-gemm.txt | awk '{print $1,$2,$3,$4,$6,$15}' | paste - - ; el
[ -f $M/70b.gguf ] || timeout 60 $B/layerstream synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
timeout 330 $B/layerstream bench -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB --batch 32,64 --prompt-tokens 128 -n 128 -c 512 --stats --json $O/bench-70b-batch.json > $O/bench-70b-batch.txt 2>&1
echo "rc=$?"; grep -E "^\||CPU tier by|error" $O/bench-70b-batch.txt | head -30; el
