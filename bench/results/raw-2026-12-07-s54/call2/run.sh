#!/bin/bash
# Session 54, call 2: session 53's shared blocks in the CPU tier's attention,
# measured in the engine. The tied synthetic 70b Q4_K_M at --vram-budget
# 24GiB --ram-budget 48GiB, a 4,093-token prompt (scripts/data/prompt-1k.txt
# four times), then 96 tokens: plain decoding, and the replay draft at
# acceptance 0.7 with K = 7 with the shared blocks (the default) and without
# (LS_ATTN_SHARE=1), alternated, two rounds. Ids must equal plain decoding's.
# Run: OUT=$OUT LIMIT=560 bash bench/results/raw-2026-12-07-s54/call2/run.sh $PWD
#      (timeout 590; carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-560}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
synth_70b_bg
P=/tmp/prompt-4k.txt
for i in 1 2 3 4; do cat "$R/scripts/data/prompt-1k.txt"; done > $P
wait $SYN; echo "synth rc=$?"; el
L=$B/layerstream
A=(-m "$F" --vram-budget 24GiB --ram-budget 48GiB -c 4608 -f $P -n 96 --temp 0 --ids
   --no-display-prompt --stats)
tps() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" "$1"; }
timeout 120 $L decode "${A[@]}" > $O/plain.txt 2> $O/plain.err; echo "plain rc=$? $(tps $O/plain.err)"
tail -1 $O/plain.txt > $O/plain.ids
grep -E "prompt|CPU tier" $O/plain.err | head -4 | cut -c1-200; el; pack
for r in 1 2; do
  for s in default 1; do
    left 60 || break
    f=$O/spec-$s-$r
    if [ $s = default ]; then e=(); else e=(LS_ATTN_SHARE=$s); fi
    env "${e[@]}" timeout 100 $L decode "${A[@]}" --draft "replay:$O/plain.ids:0.7" --draft-min 7 \
      --draft-max 7 > $f.txt 2> $f.err; rc=$?
    same=differ; cmp -s $O/plain.ids <(tail -1 $f.txt) && same="ids = plain"
    echo "round $r share $s rc=$rc: $(tps $f.err) | $(grep -o "speculative.*" $f.err | head -1 | cut -c1-120) | $same"
    grep -E "CPU tier by width" $f.err | head -2 | cut -c1-220
  done
  el; pack
done
finish
