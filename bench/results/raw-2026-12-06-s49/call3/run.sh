#!/bin/bash
# Session 49 call 3: the final defaults (the row kernel with four groups from
# 33 positions and rows to 384; chained steps): its tests, and the resident
# 8b Q4_K_M against the old path (LS_ATTENTION_ROW=0 LS_CHAIN_STEPS=0) in
# alternated rounds, short and after 200 and 300 tokens, each beside bench's
# device-memory bound.
# Run: OUT=$OUT LIMIT=240 bash bench/results/raw-2026-12-06-s49/call3/run.sh $PWD   (timeout 260)
# (carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-240}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
( timeout 120 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m > $O/synth.txt 2>&1 ) &
SYN=$!
(cd $R && timeout 100 $B/ls_gpu_tests -tc="*attention*,decode fused*,*chained*,*graphs*" > $O/tests-att.txt 2>&1)
echo "attention, chain and graph tests rc=$?"; grep -E "test cases|assertions|Status" $O/tests-att.txt | tail -3
grep -B2 -A12 "ERROR\|FAILED" $O/tests-att.txt | head -40; el; pack
wait $SYN; el
for r in 1 2; do
  for e in "LS_ATTENTION_ROW=0 LS_CHAIN_STEPS=0" "LS_X=1"; do
    env $e timeout 40 $L bench -m $M/8b-q4_k_m.gguf -n 128 > $O/b8-${e%%=*}-$r.txt 2>&1
    echo "8b round $r, $e: $(rate $O/b8-${e%%=*}-$r.txt)"
  done
done; el; pack
for p in 200 300; do
  for e in "LS_ATTENTION_ROW=0 LS_CHAIN_STEPS=0" "LS_X=1"; do
    env $e timeout 40 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens $p -n 48 > $O/b8p$p-${e%%=*}.txt 2>&1
    echo "8b after $p, $e: $(rate $O/b8p$p-${e%%=*}.txt)"
  done
done; el
finish
