#!/bin/bash
# Session 42, call 2 (default flags, the binary of HEAD = call 1's):
#  1. the pipeline's batch GPU test given 130 s (call 1 stopped it at 100 s
#     with every assertion passed so far), while the 70b is written;
#  2. issue 17 in its own shape: 32 sequences, 128-token prompts, 128 new
#     tokens each, twice;
#  3. issue 18: the replay at acceptance 0.7, three rounds of plain, K = 7
#     and K chosen by the run (each ratio to its round's plain run).
# Run: OUT=$OUT LIMIT=500 bash bench/results/raw-2026-12-06-s42/call2/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-500}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
pack() { (cd $OUT && tar -czf out.tgz r); }
mkdir -p $B $M $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nvidia-smi --query-gpu=name --format=csv,noheader; el
F=$M/70b-q4km-tied.gguf
( [ -f $F ] || timeout 220 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied ) > $O/synth.txt 2>&1 &
SYN=$!
(cd $R && timeout 130 $B/ls_gpu_tests -tc="cuda pipeline batch*" -d > $O/tests-batch.txt 2>&1)
echo "pipeline batch rc=$?"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|FATAL|ERROR" $O/tests-batch.txt | tail -4; el
wait $SYN; echo "synth rc=$?"; el; pack
for r in 1 2; do
  left 70 || break
  timeout 75 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats --batch 32 -n 128 > $O/b32-$r.txt 2>&1
  echo "width 32 run $r rc=$?"; grep -E "^\| [0-9]" $O/b32-$r.txt | cut -d"|" -f2-5,15-18; grep "CPU tier by width" $O/b32-$r.txt | cut -c1-200; el; pack
done
left 90 && (cd $R && BIN=$B OUT=/tmp/spec MODELS=$M N=128 KS=" " ALPHA_KS="7 0" ROUNDS=3 timeout $((LIMIT - SECONDS)) bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1)
echo "spec rc=$?"; cut -c1-200 $O/spec.txt | grep -E "^plain|^a0|ratio|median|CPU tier by width"; el
for f in /tmp/spec/*.err; do cp $f $O/spec-$(basename $f) 2>/dev/null; done
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
