#!/bin/bash
# Session 57, call 5 (any machine): the 8b's decode as chats run it, after
# prompts of 1, 1,024 and 4,096 tokens, beside llama.cpp at the
# same depths on the same file (the carried llama-bench, c392e5094:
# `-p 0 -n 64 -d N -ngl 99 -r 2`), Q4_K_M then Q8_0; and the 8b Q4_K_M after
# 1,024 tokens with the norms, attention, SwiGLU left out (LS_STEP_OMIT).
# Run: OUT=$OUT LIMIT=420 bash bench/results/raw-2026-12-07-s57/call5/run.sh $PWD (timeout 450;
# carry .gpubin/bin.txz and .gpubin/llama-bench.txz, model/weights/*.gguf moved aside)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-420}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream
mkdir -p /tmp/lc && tar -xJf "$R/.gpubin/llama-bench.txz" -C /tmp/lc; LB=/tmp/lc/llama-bench
for q in q4_k_m q8_0; do
  timeout 120 $L synth -q -o $M/8b-$q.gguf --preset 8b --quant $q > $O/synth-$q.txt 2>&1; echo "synth $q rc=$?"
done; el
for q in q4_k_m q8_0; do
  for n in 1 1024 4096; do
    left 40 || break
    timeout 60 $L bench -m $M/8b-$q.gguf --prompt-tokens $n -n 64 -c 4224 > $O/b-$q-$n.txt 2>&1
    echo "layerstream $q after $n: $(rate $O/b-$q-$n.txt)"
  done
  left 60 || break
  timeout 120 $LB -m $M/8b-$q.gguf -p 0 -n 64 -d 0,1024,4096 -ngl 99 -r 2 > $O/lc-$q.txt 2>&1
  echo "llama.cpp $q rc=$?"; grep -E "tg64" $O/lc-$q.txt | awk -F'|' '{print $(NF-2), $(NF-1)}'
  el; pack
done
AB="LS_STEP_OMIT=0;LS_STEP_OMIT=1;LS_STEP_OMIT=2;LS_STEP_OMIT=4;LS_STEP_OMIT=7"
left 40 && ab_runs omit1k 1 -m $M/8b-q4_k_m.gguf --prompt-tokens 1024 -n 64 -c 1152
el; finish
