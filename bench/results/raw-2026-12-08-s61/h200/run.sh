#!/bin/bash
# Session 61, for an H200 right after session 60's call 2 on the same warm
# machine: the A/B switches built for the H200's gap (more bytes in flight
# than the H100 needs), none of which has run on an H200: LS_GEMV_ROWS=8 (the
# direct GEMV's 8 rows a block), LS_GEMV_AHEAD=8 (each block prefetches the
# rows 8 MiB after its own), LS_L2_PREFETCH_GEMV=4 (a GEMV asks the L2 for the
# next GEMV's first 4 MiB), LS_L2_PREFETCH=16 (the kernels between GEMVs do),
# LS_GEMV_EARLY=1, LS_GEMV_STREAM=0, alternated with the default, on the 8b
# Q4_K_M `bench -n 128`, as many rounds as fit (at most 3); then the Q8_0 and
# after a 16k prompt with the best of them if time is left.
# Run: OUT=$OUT LIMIT=540 bash bench/results/raw-2026-12-08-s61/h200/run.sh $PWD (timeout 570;
# carry .gpubin/bin.txz (4a91a12); model/weights/*.gguf moved aside)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-540}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
for q in q4_k_m q8_0; do
  [ -f $M/8b-$q.gguf ] || timeout 120 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q > $O/synth-$q.txt 2>&1
done; el
AB="LS_GEMV_ROWS=0;LS_GEMV_ROWS=8;LS_GEMV_AHEAD=8;LS_L2_PREFETCH_GEMV=4;LS_L2_PREFETCH=16;LS_GEMV_EARLY=1;LS_GEMV_STREAM=0"
for r in 1 2 3; do
  left 150 || break
  ab_runs q4r$r 1 -m $M/8b-q4_k_m.gguf -n 128; el; pack
done
AB="LS_GEMV_ROWS=0;LS_GEMV_ROWS=8;LS_GEMV_AHEAD=8;LS_L2_PREFETCH_GEMV=4"
left 100 && { ab_runs q8 1 -m $M/8b-q8_0.gguf -n 128; el; pack; }
for e in LS_GEMV_ROWS=0 LS_GEMV_ROWS=8; do
  left 70 || break
  env $e timeout 90 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 > $O/b16k-$e.txt 2>&1
  echo "after 16k, $e: $(rate $O/b16k-$e.txt)"
done; el
finish
