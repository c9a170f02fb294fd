#!/bin/bash
# Session 21, call 5 (H200): issue 18's verify step on the 70b at 24 GiB with
# the pairs tile default: plain decode, the replay draft at acceptance 1 with
# K = 3 and 7 (the cost of a verify step of width 4 and 8), and at 0.7, K = 7.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/bn; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
date -u; tar -xJf .gpubin/bin.txz -C $B || exit 2
L=$B/layerstream
[ -f $M/70b.gguf ] || timeout 200 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
F="-m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB -p Once_upon_a_time -n 64 --temp 0 --ids --no-display-prompt"
timeout 70 $L decode $F > $O/plain.txt 2> $O/plain.err; echo "plain rc=$?"; tail -1 $O/plain.txt > $M/ids.txt; grep "generated" $O/plain.err | sed 's/.*generated/generated/'; el
for k in 3 7; do
  timeout 60 $L decode $F --draft replay:$M/ids.txt:1 --draft-min $k --draft-max $k > $O/k$k.txt 2> $O/k$k.err
  echo "K=$k a=1: $(grep -E 'generated' $O/k$k.err | sed 's/.*generated/generated/') | $(grep speculative $O/k$k.err)"
  cmp -s <(tail -1 $O/plain.txt) <(tail -1 $O/k$k.txt) && echo "  identical"; done; el
timeout 60 $L decode $F --draft replay:$M/ids.txt:0.7 --draft-min 7 --draft-max 7 > $O/k7a07.txt 2> $O/k7a07.err
echo "K=7 a=0.7: $(grep -E 'generated' $O/k7a07.err | sed 's/.*generated/generated/') | $(grep speculative $O/k7a07.err)"
cmp -s <(tail -1 $O/plain.txt) <(tail -1 $O/k7a07.txt) && echo "  identical"; el
date -u
