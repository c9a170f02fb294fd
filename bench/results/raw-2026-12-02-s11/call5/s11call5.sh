#!/bin/bash
# Session 11, call 5: (A) resident 8b Q4_K_M, polling between steps (default)
# against LS_POLL_WAIT=0, 256 tokens, rounds interleaved, and a 32-token
# trace of each (the step gap, the warm gpu-compute busy share); (B) the 70b
# Q4_K_M fully resident beside llama.cpp (c392e50) on the same file.
set -u
O=$OUT/l; mkdir -p $O; M=/tmp/ls-models; B=/tmp/b11; mkdir -p $M $B
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
t0=$(date +%s); el() { echo "   [$(($(date +%s) - t0)) s]"; }
date -u; nvidia-smi -L
tar -xJf .gpubin/bin.txz -C $B && tar -xJf .llama/lcpk.txz -C /tmp || exit 2
L=$B/layerstream; LB=/tmp/lcpk; export LD_LIBRARY_PATH=$LB:$LD_LIBRARY_PATH
[ -f $M/8b-q4_k_m.gguf ] || timeout 90 $L synth -q -o $M/8b-q4_k_m.gguf --preset 8b --quant q4_k_m; el
D="-p Hello -n 256 --temp 0 --no-display-prompt"
for r in 1 2 3; do for sw in LS_POLL_WAIT=1 LS_POLL_WAIT=0; do
  echo "round $r $sw: $(env $sw $L decode -m $M/8b-q4_k_m.gguf $D 2>&1 >/dev/null | grep -o 'generated.*tok/s')"
done; done
for sw in 1 0; do
  LS_POLL_WAIT=$sw timeout 60 $L decode -m $M/8b-q4_k_m.gguf -p Hello -n 32 --temp 0 --no-display-prompt --trace $O/trace-poll$sw.json > /dev/null 2>&1
  $L trace summarize --from-step 3 $O/trace-poll$sw.json | grep -E "over|gpu-compute"
done; xz -T4 $O/trace-poll*.json; el
rm -f $M/8b-*.gguf
timeout 150 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for r in 1 2; do echo -n "layerstream 70b resident: "; timeout 90 $L decode -m $M/70b.gguf -p Hello -n 64 --temp 0 --no-display-prompt 2>&1 >/dev/null | grep -o "generated.*tok/s\|error.*"; done; el
timeout 150 $LB/llama-bench -m $M/70b.gguf -ngl 99 -p 0 -n 64 -r 2 2>&1 | grep -E "tg|error"; el
tar -cJf $OUT/s11call5.txz -C $O . ; el
