#!/bin/bash
# Issue 20's lines when an H200 comes (written in session 49, not yet run):
# the GPU suite's decode tests; the resident 8b Q4_K_M against the path
# before session 49 (LS_ATTENTION_ROW=0 LS_CHAIN_STEPS=0), alternated rounds,
# and Q8_0, each against bench's device-memory bound; the 8b after 16,000
# tokens; the 70b Q4_K_M fully resident (the synthetic file written in the
# background while the 8b runs; it needs the H200's memory).
# Run: OUT=$OUT LIMIT=570 bash bench/results/raw-2026-12-06-s49/next-h200/run.sh $PWD   (timeout 590,
# kind nvidia-h200 with needs_h200: the 70b does not fit an H100)
# (carry .gpubin/bin.txz, from scripts/gpu_pack.sh at the tree it runs)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-570}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
F=$M/70b-q4km.gguf
( timeout 240 $L synth -q -o $F --preset 70b --quant q4_k_m > $O/synth70.txt 2>&1; echo "rc=$?" >> $O/synth70.txt ) &
SYN=$!
for q in q4_k_m q8_0; do
  timeout 120 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q > /dev/null 2>&1; echo "synth 8b $q rc=$?"
done; el
(cd $R && timeout 120 $B/ls_gpu_tests -tc="*attention*,decode fused*,*chained*,*graphs*" > $O/tests.txt 2>&1)
echo "tests rc=$?"; grep -E "test cases|assertions|Status" $O/tests.txt | tail -3
grep -B2 -A12 "ERROR\|FAILED" $O/tests.txt | head -40; el; pack
for r in 1 2; do
  for e in "LS_ATTENTION_ROW=0 LS_CHAIN_STEPS=0" "LS_X=1"; do
    env $e timeout 40 $L bench -m $M/8b-q4_k_m.gguf -n 128 > $O/b8-${e%%=*}-$r.txt 2>&1
    echo "8b q4_k_m round $r, $e: $(rate $O/b8-${e%%=*}-$r.txt)"
  done
  timeout 40 $L bench -m $M/8b-q8_0.gguf -n 128 > $O/b8q8-$r.txt 2>&1
  echo "8b q8_0 round $r: $(rate $O/b8q8-$r.txt)"
done
grep "device memory bound" $O/b8-LS_X-1.txt | cut -c1-200; el; pack
timeout 90 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 > $O/b8-16k.txt 2>&1
echo "8b 16k: $(rate $O/b8-16k.txt)"; grep "device memory bound" $O/b8-16k.txt | cut -c1-200; el; pack
rm -f $M/8b-q8_0.gguf
wait $SYN; cat $O/synth70.txt; el
for r in 1 2; do
  left 60 && timeout 60 $L bench -m $F -n 64 > $O/b70-$r.txt 2>&1
  echo "70b resident round $r: $(rate $O/b70-$r.txt)"
done
grep "device memory bound" $O/b70-1.txt | cut -c1-200; el
finish
