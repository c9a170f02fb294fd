#!/bin/bash
# Session 49 call 2: the row kernel with groups of head_dim threads (one,
# two, four by the row's capacity; LS_ATTENTION_ROW_GROUPS=1 all one, as in
# call 1) and a launch sized for 128 rows; its tests; the attention alone at
# each group count; the resident 8b Q4_K_M (three forms, alternated rounds)
# against bench's device-memory bound, after 200 and 16,000 tokens too; after
# 300 tokens, rows past the default's 256 on the row kernel
# (LS_ATTENTION_ROW_MAX=384) against the splits. (llama.cpp's binary does not
# fit the call beside ours and the tree: its figures on this kind of card are
# session 48's.)
# Run: OUT=$OUT LIMIT=500 bash bench/results/raw-2026-12-06-s49/call2/run.sh $PWD   (timeout 530)
# (carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-560}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
( for q in q4_k_m; do timeout 120 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q; echo "synth $q rc=$?"; done > $O/synth.txt 2>&1 ) &
SYN=$!
(cd $R && timeout 200 $B/ls_gpu_tests -tc="*attention*,decode fused*,*chained*,*graphs*" > $O/tests-att.txt 2>&1)
echo "attention, chain and graph tests rc=$?"; grep -E "test cases|assertions|Status" $O/tests-att.txt | tail -3
grep -B2 -A12 "ERROR\|FAILED" $O/tests-att.txt | head -60; el; pack
for g in 1 2 4 0; do
  if [ $g = 0 ]; then e="LS_X=1"; else e="LS_ATTENTION_ROW_GROUPS=$g"; fi
  env $e timeout 60 $B/ls_bench_attention 5,6 --short > $O/bench-att-g$g.txt 2>&1
  echo "bench_attention groups $g (0: default) rc=$?"; grep ctx $O/bench-att-g$g.txt | sed 's/| k5 fix[^|]*//' | cut -c1-200
done; el; pack
wait $SYN; cat $O/synth.txt; el
form() {  # 0: neither change; 1: the row kernel of call 1 (one group) and chained steps; 2: the default
  case $1 in 0) echo "LS_ATTENTION_ROW=0 LS_CHAIN_STEPS=0";; 1) echo "LS_ATTENTION_ROW_GROUPS=1";; 2) echo "LS_X=1";; esac
}
for r in 1 2; do
  for v in 0 1 2; do
    env $(form $v) timeout 60 $L bench -m $M/8b-q4_k_m.gguf -n 128 > $O/b8-f$v-$r.txt 2>&1
    echo "8b q4_k_m form $v round $r: $(rate $O/b8-f$v-$r.txt)"
  done
done
grep "device memory bound" $O/b8-f2-1.txt | cut -c1-200; el; pack
for v in 0 1 2; do
  env $(form $v) timeout 60 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 200 -n 48 > $O/b8p200-f$v.txt 2>&1
  echo "8b after 200, form $v: $(rate $O/b8p200-f$v.txt)"
done; el; pack
for e in LS_X=1 LS_ATTENTION_ROW_MAX=384 LS_ATTENTION_ROW=0; do
  env $e timeout 60 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 300 -n 48 > $O/b8p300-${e%%=*}.txt 2>&1
  echo "8b after 300, $e: $(rate $O/b8p300-${e%%=*}.txt)"
done; el; pack
timeout 120 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 > $O/b8-16k.txt 2>&1
echo "8b 16k: $(rate $O/b8-16k.txt)"; grep "device memory bound" $O/b8-16k.txt | cut -c1-200; el; pack
finish
