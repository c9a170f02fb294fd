#!/bin/bash
# Session 57, call 2 (any machine): issue 20's two questions after call 1.
# (1) ls_bench_grid_barrier with the hierarchical barrier and a bounded L2
#     prefetch beside call 1's flat barrier, twice (call 1: the flat one
#     cost 4.1 us a barrier against 0.53 us a PDL boundary);
# (2) what the kernels between the GEMVs cost inside the 8b Q4_K_M's step:
#     `bench -n 128` with each layer leaving out the norms (LS_STEP_OMIT=1),
#     attention (2), SwiGLU (4), all three (7), against none (0),
#     alternated, two rounds (the tokens differ with them left out: timing only).
# Run: OUT=$OUT LIMIT=300 bash bench/results/raw-2026-12-07-s57/call2/run.sh $PWD (timeout 330;
# carry .gpubin/bin.txz, model/weights/*.gguf moved aside)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-300}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
( timeout 120 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1; echo "synth rc=$?" ) &
SY=$!
for i in 1 2; do
  timeout 60 $B/ls_bench_grid_barrier > $O/barrier-$i.txt 2>&1; echo "grid barrier run $i rc=$?"
  grep -E "^bound|^persistent:|^\|" $O/barrier-$i.txt
done
wait $SY; el; pack
AB="LS_STEP_OMIT=0;LS_STEP_OMIT=1;LS_STEP_OMIT=2;LS_STEP_OMIT=4;LS_STEP_OMIT=7"
for r in 1 2; do
  left 60 || break
  ab_runs omit$r 1 -m $M/8b-q4_k_m.gguf -n 128
done
grep "device memory bound" $O/omit1-*.txt | head -1 | cut -c1-200
el; finish
