#!/bin/bash
# Session 55, call 1: the L2 prefetch of the next GEMV's weights
# (kernels/l2_prefetch.cuh). Each kernel of a decode step asks the L2 for the
# first bytes of the weights of the GEMV after it, before its PDL wait:
# LS_L2_PREFETCH MiB from the kernels between GEMVs (norms, attention,
# SwiGLU), LS_L2_PREFETCH_GEMV MiB from a GEMV; off by default until
# measured, so every setting below names its values (on: 16 / 4).
# (1) the GPU tests the change touches (the new bits check of a prefetching
#     GEMV launch, the fused decode, graphs, the backend),
#     and the engine's again with the prefetch ahead on;
# (2) the 8b Q4_K_M resident, `bench -n 128`: default, both off, each alone,
#     each block prefetching 8 / 16 MiB ahead of its own rows (LS_GEMV_AHEAD,
#     with the launch's first as many bytes from the kernel before),
#     alternated, three rounds; Q8_0 default and off, two;
# (3) after a 16k prompt, default and off, one run each;
# (4) if time is left, session 54's A/B switches beside the default, two
#     rounds: LS_GEMV_EARLY=1, LS_GEMV_STREAM=0, LS_GEMV_ROWS=8.
# Run: OUT=$OUT LIMIT=540 bash bench/results/raw-2026-12-07-s55/call1/run.sh $PWD (timeout 570)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-540}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
LS_L2_PREFETCH=16 LS_L2_PREFETCH_GEMV=4 timeout 150 $B/ls_gpu_tests -tc="*L2 prefetch*,decode fused*,*graphs*,*chained*,cuda backend*" \
  > $O/tests.txt 2>&1
echo "gpu tests rc=$?"; grep -E "test cases|assertions|ERROR|FAILED" $O/tests.txt | head -8; el
left 380 && LS_L2_PREFETCH=16 LS_GEMV_AHEAD=8 LS_L2_PREFETCH_GEMV=8 timeout 90 $B/ls_gpu_tests -tc="decode fused*,cuda backend*,*chained*" \
  > $O/tests-ahead.txt 2>&1
echo "gpu tests with LS_GEMV_AHEAD=8 rc=$?"; grep -E "test cases|assertions|ERROR|FAILED" $O/tests-ahead.txt | head -8; el
L=$B/layerstream
for q in q4_k_m; do
  timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q > $O/synth-$q.txt 2>&1; echo "synth $q rc=$?"
done; el
ON="LS_L2_PREFETCH=16 LS_L2_PREFETCH_GEMV=4"; OFF="LS_L2_PREFETCH=0 LS_L2_PREFETCH_GEMV=0"
AB="$ON;$OFF;LS_L2_PREFETCH=16 LS_L2_PREFETCH_GEMV=0;LS_L2_PREFETCH=0 LS_L2_PREFETCH_GEMV=4;LS_L2_PREFETCH=16 LS_GEMV_AHEAD=8 LS_L2_PREFETCH_GEMV=8;LS_L2_PREFETCH=16 LS_GEMV_AHEAD=16 LS_L2_PREFETCH_GEMV=16"
ab_runs q4 ${ROUNDS:-3} -m $M/8b-q4_k_m.gguf -n 128; el; pack
AB="$ON;$OFF"
for e in "$ON" "$OFF"; do
  left 100 || break
  n=$(echo "$e" | tr ' =' '__')
  env $e timeout 100 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 > $O/b16k-$n.txt 2>&1
  echo "after 16k, $e: $(rate $O/b16k-$n.txt)"
done; el
if left 90; then
  timeout 90 $L synth -q -o $M/8b-q8_0.gguf --preset 8b --quant q8_0 > $O/synth-q8_0.txt 2>&1
  echo "synth q8_0 rc=$?"; ab_runs q8 2 -m $M/8b-q8_0.gguf -n 128; el; pack
fi
AB="$OFF;$OFF LS_GEMV_EARLY=1;$OFF LS_GEMV_STREAM=0;$OFF LS_GEMV_ROWS=8"
left 100 && { ab_runs old 2 -m $M/8b-q4_k_m.gguf -n 128; el; }
finish
