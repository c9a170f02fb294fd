#!/bin/bash
# Session 59, call 2 (not run: spans were dropped after call 1; bin.txz at 4a91a12 has the switch): the CPU attention's spans in the engine (issue 14's
# shape): the synthetic 70b Q4_K_M at 24 GiB, default flags otherwise,
# decode after 1,024-, 4,096- and 1-token prompts with LS_ATTN_SPANS=0, 1, 2
# alternated; the GPU tests that hold the CPU backend and the hybrid plans
# to the GPU's tokens, with LS_ATTN_SPANS=1.
# Run: OUT=$OUT LIMIT=560 bash bench/results/raw-2026-12-07-s59/call2/run.sh $PWD (timeout 590;
# carry .gpubin/bin.txz (4a91a12); model/weights/*.gguf moved aside)
set -u
R=$1; LIMIT=${LIMIT:-560}; O=$OUT/r
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
F=$M/70b-q4km.gguf
( timeout 260 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m ) > $O/synth.txt 2>&1 &
SYN=$!
mkdir -p $R/.ut && cd $R/.ut
LS_ATTN_SPANS=1 timeout 200 $B/ls_gpu_tests -tc="*match the CPU*,*hybrid plans*,*agree with the CPU*" \
  > $O/gpu-tests.txt 2>&1
echo "gpu tests (LS_ATTN_SPANS=1) rc=$?"; grep -E "test cases|assertions|ERROR|FAILED" $O/gpu-tests.txt | head
cd /tmp; wait $SYN; echo "synth rc=$?"; el
BB="--vram-budget 24GiB --ram-budget 48GiB -c 4608"
for r in 1 2; do
  for p in 1024 4096 1; do
    [ $p = 1 ] && [ $r = 2 ] && continue
    for s in 0 1 2; do
      left 45 || break
      LS_ATTN_SPANS=$s timeout 120 $B/layerstream bench -m $F $BB -n 32 --prompt-tokens $p --stats \
        > $O/p$p-s$s-$r.txt 2>&1
      echo "prompt $p LS_ATTN_SPANS=$s round $r: $(rate $O/p$p-s$s-$r.txt) $(grep -E 'CPU tier' $O/p$p-s$s-$r.txt | head -2 | tr '\n' ' ')"
    done
  done
done; el
finish
