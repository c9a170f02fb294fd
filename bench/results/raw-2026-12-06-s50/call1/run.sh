#!/bin/bash
# Session 50 call 1: (a) session 49's defaults in the engine, not yet run
# there (the row kernel with four groups above 32 rows, rows to 384; chained
# steps) and the 1689bfb fold: their GPU tests and the 8b Q4_K_M against the
# path before session 49; (b) the direct GEMV with one warp a tile (the 8b's
# down GEMV: 7 warps of one tile where it ran 4 warps of 2, 2, 2, 1):
# its GPU test, ls_bench_matmul --graph (v7 against v704, at most 4 warps)
# and the engine against LS_GEMV_WARPS=4; (c) issue 14's CPU attention at
# 1k-16k.
# Run: OUT=$OUT LIMIT=420 bash bench/results/raw-2026-12-06-s50/call1/run.sh $PWD   (timeout 440)
# (carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-420}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
( timeout 120 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1 ) &
SYN=$!
(cd $R && timeout 150 $B/ls_gpu_tests -tc="*attention*,decode fused*,*chained*,*graphs*,cuda matmul: gemv v5*" > $O/tests.txt 2>&1)
echo "tests rc=$?"; grep -E "test cases|assertions|Status" $O/tests.txt | tail -3
grep -B2 -A12 "ERROR\|FAILED" $O/tests.txt | head -40; el; pack
timeout 60 $B/ls_bench_matmul --graph > $O/graph8b.txt 2>&1
grep -E "bound|graph x20" $O/graph8b.txt | sed 's/ v2 [^|]*|//; s/ v5 [^|]*|//; s/ v6 [^|]*|//; s/ v62 [^|]*|//; s/ v68 [^|]*|//' | cut -c1-330
el; pack
wait $SYN; el
for r in 1 2; do
  for e in "LS_ATTENTION_ROW=0 LS_CHAIN_STEPS=0 LS_GEMV_WARPS=4" "LS_GEMV_WARPS=4" "LS_X=1"; do
    n=$(echo $e | tr ' =' '__')
    env $e timeout 40 $L bench -m $M/8b-q4_k_m.gguf -n 128 > $O/b8-$n-$r.txt 2>&1
    echo "8b round $r, $e: $(rate $O/b8-$n-$r.txt)"
  done
done; el; pack
for p in 300; do
  for e in "LS_ATTENTION_ROW=0 LS_CHAIN_STEPS=0 LS_GEMV_WARPS=4" "LS_X=1"; do
    n=$(echo $e | tr ' =' '__')
    env $e timeout 40 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens $p -n 48 > $O/b8p$p-$n.txt 2>&1
    echo "8b after $p, $e: $(rate $O/b8p$p-$n.txt)"
  done
done; el; pack
if left 70; then
  timeout 60 $B/ls_bench_cpu_attention --threads 16 --ctx 1024,2048,4096,16384 --reps 41 > $O/cpu-att.txt 2>&1
  grep -E "host|^ *[0-9]+ " $O/cpu-att.txt | head -20; el
fi
finish
