#!/bin/bash
# Session 8, call 1: the AMX GEMM on the Xeon: unit tests on the real tile
# unit, the kernel against the VNNI tile at 70b shapes, then the 70b batch.
set -u
O=$OUT; M=/tmp/m8; B=/tmp/b8; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; tar -xJf .gpubin/s8bin1.txz -C $B || exit 2
{ lscpu | grep -E "Model name|MHz|L2|L3|^CPU\(s\)"; uname -r; nvidia-smi --query-gpu=name --format=csv,noheader; } > $O/sys.txt 2>&1
timeout 120 $B/ls_unit_tests -tc="cpu_gemm_q8*,cpu_matmul*,*q8*,pipeline batch*" > $O/unit.txt 2>&1; echo "unit rc=$?"; tail -4 $O/unit.txt; grep -c "SKIPPED: amx" $O/unit.txt; el
timeout 150 $B/ls_bench_cpu_matmul --threads 16 --ntok 8,16,32,64 --types q4_k,q6_k --act q8 --path gemm --amx off,on --shapes 70b --reps 5 --weights-gib 4 > $O/bench-cpu-gemm.txt 2>&1; echo "cpu bench rc=$?"; grep -E "^q|^type" $O/bench-cpu-gemm.txt | head -80; el
timeout 60 $B/layerstream synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
timeout 330 $B/layerstream bench -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,16,32,64 --prompt-tokens 128 -n 128 -c 512 --stats --json $O/bench-70b-batch.json > $O/bench-70b-batch.txt 2>&1
echo "rc=$?"; grep -E "^\||CPU tier by|error|plan" $O/bench-70b-batch.txt | head -30; el
