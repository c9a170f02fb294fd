#!/bin/bash
# Session 8, call 4: speculative decoding on the 70b at 24 GiB: greedy
# identity on the GPU, the replay draft at acceptance 0.7 against plain
# decoding in the same run, and the verify step's cost by width.
set -u
O=$OUT; M=/tmp/m8; B=/tmp/b8; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; tar -xJf .gpubin/s8bin4.txz -C $B || exit 2
L=$B/layerstream
timeout 60 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
F="-m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB -p Once_upon_a_time -n 64 --temp 0 --ids --no-display-prompt"
timeout 60 $L decode $F > $O/plain.txt 2> $O/plain.err; echo "plain rc=$?"; tail -1 $O/plain.txt > $M/ids.txt; grep "generated" $O/plain.err; el
timeout 60 $L decode $F --draft replay:$M/ids.txt:0.7 > $O/spec07.txt 2> $O/spec07.err; echo "spec rc=$?"; grep -E "generated|speculative" $O/spec07.err
cmp <(tail -1 $O/plain.txt) <(tail -1 $O/spec07.txt) && echo "GREEDY IDENTICAL (replay 0.7)"; el
timeout 60 $L decode $F > $O/plain2.txt 2> $O/plain2.err; grep "generated" $O/plain2.err; el
for k in 1 3 7 15; do
  timeout 45 $L decode $F --draft replay:$M/ids.txt:1 --draft-min $k --draft-max $k > $O/k$k.txt 2> $O/k$k.err
  echo "K=$k: $(grep -E 'generated' $O/k$k.err | sed 's/.*generated/generated/') | $(grep speculative $O/k$k.err)"
  cmp -s <(tail -1 $O/plain.txt) <(tail -1 $O/k$k.txt) && echo "  identical"; done; el
timeout 60 $L decode $F --draft lookup > $O/lookup.txt 2> $O/lookup.err; grep -E "generated|speculative" $O/lookup.err; cmp -s <(tail -1 $O/plain.txt) <(tail -1 $O/lookup.txt) && echo "  lookup identical"; el
