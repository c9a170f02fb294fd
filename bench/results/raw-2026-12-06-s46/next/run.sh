#!/bin/bash
# The next session's first call (written in session 46): issue 20's lines on
# whatever card comes (its targets are the H200's; say which card gave each
# figure): the resident 8b Q4_K_M and Q8_0 against bench's device-memory
# bound, two rounds each; the 8b after 16,000 tokens; the 70b Q4_K_M fully
# resident (fits an H100's 80 GB too); then the GPU tests of the fused
# decode kernels and the cuda/cpu comparison.
# Run: OUT=$OUT LIMIT=570 bash bench/results/raw-2026-12-06-s46/next/run.sh $PWD   (timeout 600)
# (carry .gpubin/bin.txz, repacked at HEAD by scripts/gpu_pack.sh)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-570}
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
done; el; pack
timeout 120 $L bench -m $M/8b-q4_k_m.gguf --prompt-tokens 16000 -n 64 -c 16384 > $O/b8-16k.txt 2>&1
echo "8b 16k: $(rate $O/b8-16k.txt)"; rm -f $M/8b-*.gguf; el; pack
if left 200; then
  timeout 150 $L synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m > /dev/null 2>&1; echo "synth 70b rc=$?"
  timeout 90 $L bench -m $M/70b.gguf -n 64 > $O/b70.txt 2>&1; echo "70b resident: $(rate $O/b70.txt)"
  grep -E "tier plan|device memory bound" $O/b70.txt | cut -c1-200; rm -f $M/70b.gguf; el; pack
fi
(cd $R && timeout $((LIMIT - SECONDS - 10)) $B/ls_gpu_tests -tc="decode fused*,cuda backend*" > $O/tests.txt 2>&1)
echo "GPU tests rc=$?"; grep -E "test cases|assertions|Status" $O/tests.txt | tail -3; el
finish
