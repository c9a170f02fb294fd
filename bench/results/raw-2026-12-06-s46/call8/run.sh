#!/bin/bash
# Session 46, call 8: issue 20 on the H100. The short-context attention
# splits (16 of at least 8 positions) and the GEMV wave fit were tuned on the
# H200; A/B them here on the resident 8b Q4_K_M (bench -n 128, two rounds,
# interleaved), then the 8b after 16,000 tokens against its bound.
# Run: OUT=$OUT LIMIT=300 bash bench/results/raw-2026-12-06-s46/call8/run.sh $PWD  (carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-300}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
L=$B/layerstream; E=$M/8b.gguf
timeout 60 $L synth -q -o $E --preset 8b --quant q4_k_m > /dev/null 2>&1; echo "synth rc=$?"; el
rate() { grep -E "^\| [0-9]" "$1" | tail -1 | awk -F'|' '{print $2, $(NF-3)}'; }
for r in 1 2; do
  for v in "X=0" "LS_ATTENTION_SHORT=8,16" "LS_ATTENTION_SHORT=32,4" "LS_ATTENTION_SHORT=4,32" \
           "LS_ATTENTION_SHORT=1,1000" "LS_GEMV_WAVES=0"; do
    env $v timeout 40 $L bench -m $E -n 128 > $O/b-$v-$r.txt 2>&1
    echo "round $r $v: tok/s, ratio: $(rate $O/b-$v-$r.txt)"
  done
done | tee $O/ab.txt; el; pack
for r in 1 2; do
  left 50 || break
  timeout 60 $L bench -m $E --prompt-tokens 16000 -n 64 -c 16384 > $O/b16k-$r.txt 2>&1
  echo "16k round $r: $(rate $O/b16k-$r.txt)"; grep "device memory bound" $O/b16k-$r.txt | cut -c1-230
done; el
finish
