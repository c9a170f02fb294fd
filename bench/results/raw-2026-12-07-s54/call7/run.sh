#!/bin/bash
# Session 54, call 7: is a 1k call bound by its arithmetic? The AVX2
# variant (256-bit: half the multiply rate, no 512-bit power license) beside
# the AVX-512 one (the default), at 1k and 4k, three rounds; and 8 threads
# against 16 (call 6: two to four of the 16 threads run at half speed in
# any call, not the same ones from run to run).
# Run: OUT=$OUT LIMIT=100 bash bench/results/raw-2026-12-07-s54/call7/run.sh $PWD (timeout 120; carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-100}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
A=$B/ls_bench_cpu_attention
for r in 1 2 3; do
  timeout 40 $A --threads 8,16 --ctx 1024,4096 --isa avx512,avx2 --reps 61 > $O/isa-$r.txt 2>&1
  echo "round $r rc=$?"; grep -E "^ +(8|16) +[0-9.]+ |^ +(1024|4096) " $O/isa-$r.txt
done
el; finish
