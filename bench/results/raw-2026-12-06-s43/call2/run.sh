#!/bin/bash
# Session 43, call 2: the device reserves cut (split-attention partials only
# for batches that split; the dequantization scratch capped at 128 MiB,
# larger weights in slices). What it must show:
#  1. the backend's and streaming GPU tests pass (tiny and 1b: bits against
#     the CPU, graphs against launches, streamed against resident), while
#     the 70b is written;
#  2. the 70b at 24 GiB plans one more resident layer (the plan's lines);
#  3. issue 17's shape: 32 sequences, 128-token prompts, 128 new tokens, twice;
#  4. issue 18: plain and the replay at acceptance 0.7, K = 7, ROUNDS rounds.
# Run: OUT=$OUT LIMIT=420 bash (timeout 450) bench/results/raw-2026-12-06-s43/call2/run.sh $PWD
# (carry .gpubin/bin.txz, packed at this commit by scripts/gpu_pack.sh)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-420}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
synth_70b_bg
(cd $R && timeout 110 $B/ls_gpu_tests -tc="cuda backend*,cuda streaming*,cuda matmul: a weight larger*" > $O/tests.txt 2>&1)
echo "backend and streaming tests rc=$?"; grep -E "test cases|assertions|Status|ERROR|FATAL" $O/tests.txt | tail -6; el
wait $SYN; echo "synth rc=$?"; el; pack
for r in 1 2; do
  left 150 || break
  timeout 75 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats --batch 32 -n 128 > $O/b32-$r.txt 2>&1
  echo "width 32 run $r rc=$?"; [ $r = 1 ] && grep -E "tier plan|resident layers|KV cache|activations|dequantization|device slots" $O/b32-$r.txt | head -8
  grep -E "^\| [0-9]" $O/b32-$r.txt | cut -d"|" -f2-5,15-18; grep "CPU tier by width" $O/b32-$r.txt | cut -c1-200; el; pack
done
left 90 && (cd $R && BIN=$B OUT=/tmp/spec MODELS=$M N=128 KS=" " ALPHA_KS="7" ROUNDS=${SPEC_ROUNDS:-2} timeout $((LIMIT - SECONDS - 15)) bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1)
echo "spec rc=$?"; cut -c1-200 $O/spec.txt | grep -E "^plain|^a0|ratio|median|CPU tier by width"; el
for f in /tmp/spec/*.err; do cp $f $O/spec-$(basename $f) 2>/dev/null; done
grep -E "tier plan|resident layers|activations|dequantization" $O/spec-plain.err 2>/dev/null | head -4
finish
