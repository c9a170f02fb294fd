#!/bin/bash
# Session 45, call 2: where a width-32 step's time goes past the routing's
# simulated step (call 1: 326 ms measured against 311 predicted).
# Run: OUT=$OUT LIMIT=300 bash bench/results/raw-2026-12-06-s45/call2/run.sh $PWD
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-300}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
synth_70b_bg; wait $SYN; echo "synth rc=$?"; el
B32=(-m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats --batch 32 -n 64)
timeout 120 $B/layerstream bench "${B32[@]}" --trace $O/t32.json > $O/b32-trace.txt 2>&1
echo "width 32 traced rc=$?"; xz -T4 $O/t32.json; ls -la $O
grep -E "^\| [0-9]" $O/b32-trace.txt | cut -d"|" -f2-5,15-18; grep -E "CPU tier by width|device memory: the run took" $O/b32-trace.txt | cut -c1-240
el; finish
