#!/bin/bash
# For the next session's first call (written in session 38, not run yet).
# Pack first: scripts/gpu_pack.sh; carry .gpubin/bin.txz.
# Run: OUT=$OUT LIMIT=540 bash bench/results/raw-2026-12-05-s38/next/run.sh $PWD
# Output: $OUT/out.tgz (every log). In order, while LIMIT lasts:
#  1. issue 17's width 32: the width routing's simulation put session 38's
#     step at 321 ms (99.5 tok/s) where it took 355 (90.1): a trace of a
#     width-32 run (copy engine idle between which layers), then device
#     slots 3 against 4 (the simulation: 4 slots, one resident layer fewer,
#     103 tok/s), two rounds alternated;
#  2. issue 18's replay with 3 and 4 slots (the simulation: width 8 a
#     little slower with 4).
set -u
R=$1; O=$OUT/r; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-540}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
mkdir -p $B $M $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nproc; grep -m1 "model name" /proc/cpuinfo; nvidia-smi --query-gpu=name --format=csv,noheader; el
F=$M/70b-q4km-tied.gguf
[ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
A=(-m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats)
timeout 60 $B/layerstream bench "${A[@]}" --batch 32 -n 24 --trace $O/t32.json > $O/trace32.txt 2>&1
echo "trace rc=$?"; (cd $R && python3 scripts/trace_steps.py $O/t32.json > $O/trace32-steps.txt 2>&1); head -40 $O/trace32-steps.txt; xz -9 $O/t32.json; el
for r in 1 2; do for s in 3 4; do
  left 60 || break
  timeout 60 $B/layerstream bench "${A[@]}" --batch 32 -n 64 --device-slots $s > $O/b32-slots$s-$r.txt 2>&1
  echo "width 32, $s slots rc=$?"; grep -E "^\| [0-9]" $O/b32-slots$s-$r.txt | cut -d"|" -f2-5,15-18; grep -E "CPU tier by width" $O/b32-slots$s-$r.txt | cut -c1-250; el
done; done
for s in 3 4; do
  left 100 || break
  (cd $R && EXTRA="--device-slots $s" BIN=$B OUT=/tmp/spec$s MODELS=$M N=128 KS=" " ALPHA_KS="7" timeout 95 bash scripts/gpu_speculative_check.sh > $O/spec-slots$s.txt 2>&1)
  echo "spec, $s slots rc=$?"; cut -c1-200 $O/spec-slots$s.txt | grep -E "^plain|^a0|CPU tier"; el
done
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
