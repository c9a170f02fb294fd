#!/bin/bash
# Session 21, call 3 (H200): the AMX kernel over two row tiles (four tile
# chains a step) and rows an odd number of chunks apart, beside the kernel
# before (ls_bench_cpu_matmul_old, d4ad034): its bits on the real tile unit,
# its speed at 16-64 tokens; then the 70b at 24 GiB: batch-1 default decode
# with --stats (the re-planner's picks) and bench --batch 1,8,32.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
timeout 120 $B/ls_unit_tests -tc="cpu_gemm_q8*" > $O/unit-gemm.txt 2>&1
echo "cpu_gemm_q8 rc=$?"; grep -E "test cases|assertions|SKIPPED" $O/unit-gemm.txt | head -5; grep -B3 -A12 "ERROR" $O/unit-gemm.txt | head -40; el
med() { awk '/ q8 /{print $1, $3, $4, $5, $6, $8, $15, $20, $21}'; }
for r in 1 2; do for v in old new; do
  C=$B/ls_bench_cpu_matmul; [ $v = old ] && C=$B/ls_bench_cpu_matmul_old
  echo "== $v r$r"; timeout 100 $C --threads 16 --ntok 16,32,64 --types q4_k,q6_k --act q8 --path gemm --amx on --shapes 70b --reps 5 2>&1 | med
done; done > $O/amx.txt; cat $O/amx.txt; el
for v in old new; do
  C=$B/ls_bench_cpu_matmul; [ $v = old ] && C=$B/ls_bench_cpu_matmul_old
  echo "== $v l2 1 thread"; timeout 60 $C --threads 1 --ntok 16,32,64 --types q4_k --act q8 --path gemm --amx on --shapes l2 --weights-gib 0 --reps 9 2>&1 | med
done > $O/amx-l2.txt; cat $O/amx-l2.txt; el
timeout 200 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
rate() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" | tr '\n' ' '; }
timeout 100 $L decode -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB -p Hello -n 64 --temp 0 --no-display-prompt --stats > /dev/null 2> $O/hybrid-stats.txt; rate < $O/hybrid-stats.txt; echo; el
timeout 250 $L bench -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,32 --prompt-tokens 128 -n 48 -c 256 --stats > $O/batch.txt 2>&1; echo "batch rc=$?"; grep -E "^\|" $O/batch.txt | head -12; el
date -u
