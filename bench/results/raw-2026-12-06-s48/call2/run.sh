#!/bin/bash
# Session 48 call 2: HEAD (bulk copies dropped, several tool calls merged) on
# whatever card comes (issue 20's targets are the H200's): the whole GPU
# suite; the resident 8b Q4_K_M and Q8_0 against bench's device-memory
# bound, two rounds each; the 8b Q4_K_M after 16,000 tokens.
# Run: OUT=$OUT LIMIT=420 bash bench/results/raw-2026-12-06-s48/call2/run.sh $PWD   (timeout 450)
# (carry .gpubin/bin.txz, from scripts/gpu_pack.sh at HEAD)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-420}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
rate() { grep -E "^\| [0-9]" "$1" | tail -1 | awk -F'|' '{print $2, $3, $(NF-3)}'; }
for q in q4_k_m q8_0; do
  timeout 90 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q > /dev/null 2>&1; echo "synth 8b $q rc=$?"
  for r in 1 2; do
    timeout 60 $L bench -m $M/8b-$q.gguf -n 128 > $O/b8-$q-$r.txt 2>&1
    echo "8b $q round $r: $(rate $O/b8-$q-$r.txt)"; grep "device memory bound" $O/b8-$q-$r.txt | cut -c1-200
  done
  [ $q = q8_0 ] && rm -f $M/8b-q8_0.gguf
done; el; pack
timeout 120 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 > $O/b8-16k.txt 2>&1
echo "8b 16k: $(rate $O/b8-16k.txt)"; grep "device memory bound" $O/b8-16k.txt | cut -c1-200; el; pack
(cd $R && timeout $((LIMIT - SECONDS - 10)) $B/ls_gpu_tests > $O/tests.txt 2>&1)
echo "GPU tests rc=$?"; grep -E "test cases|assertions|Status" $O/tests.txt | tail -3
grep -B2 -A8 "ERROR\|FAILED" $O/tests.txt | head -40; el
finish
