#!/bin/bash
# Session 35, call 3 (for the next session with device time, after call 2):
# the issues' own lines with the binary's defaults (the step inputs and the
# hidden state read by kernels, the direct tile, the searched placement,
# K chosen from the width buckets' widest):
#  (1) issue 17: bench --batch 1,8,16,32,64 on the 70b at 24 GiB, 128-token
#      prompts, 128 new tokens each (the line's shape), with --stats (the
#      bound at each width and the CPU tier's host read);
#  (2) issue 18: the replay check, plain, K = 7 and K chosen at 0.7 (N=128).
# Run: OUT=$OUT LIMIT=560 bash bench/results/raw-2026-12-05-s35/call3/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-560}
mkdir -p $B $M
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
el
[ -x $B/layerstream ] || tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
F=$M/70b-q4km-tied.gguf
[ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
cd /tmp
timeout $((LIMIT - SECONDS - 200)) $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --batch 1,8,16,32,64 --prompt-tokens 128 -n 128 -c 512 --stats > $O/batch.txt 2>&1
echo "batch rc=$?"; grep -E "^\| [0-9]|^\|.*width|bound|CPU tier by width" $O/batch.txt | cut -c1-260; el
(cd $R && BIN=$B OUT=/tmp/spec MODELS=$M N=128 KS=" " ALPHA_KS="7 0" timeout $((LIMIT - SECONDS - 5)) bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1)
echo "spec rc=$?"; cut -c1-240 $O/spec.txt; el
