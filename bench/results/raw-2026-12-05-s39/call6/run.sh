#!/bin/bash
# Session 39, call 6: the streamed int8 GEMM as the default from 5 tokens
# (Q4_K, Q5_K) and 6 (Q6_K) and where call 5 measured it faster.
#  1. GPU tests: cuda matmul*, CUDA graphs, pipeline;
#  2. issue 18's replay (plain and K = 7 at 0.7) with the new default and
#     with the GEMV at every decode width (LS_MMQ_MIN_TOK=9), alternated;
#  3. issue 17's width 32, new default and the register kernel
#     (LS_MMQ_STREAM=0).
# Run: OUT=$OUT LIMIT=540 bash bench/results/raw-2026-12-05-s39/call6/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-540}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
mkdir -p $B $M $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nvidia-smi --query-gpu=name --format=csv,noheader; el
F=$M/70b-q4km-tied.gguf
( [ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied ) > $O/synth.txt 2>&1 &
SYN=$!
(cd $R && timeout 170 $B/ls_gpu_tests -tc="cuda matmul*,cuda backend: decode through CUDA graphs*,cuda pipeline*" > $O/gpu-tests.txt 2>&1); T=$?
echo "gpu tests rc=$T"; tail -3 $O/gpu-tests.txt; grep -E "ERROR|FAILED" $O/gpu-tests.txt | head -5; el
wait $SYN; echo "synth rc=$?"; el
for mt in 0 9 0; do
  left 100 || break
  E=""; [ $mt = 9 ] && E="LS_MMQ_MIN_TOK=9"
  (cd $R && env $E BIN=$B OUT=/tmp/spec$mt MODELS=$M N=128 KS=" " ALPHA_KS="7" timeout 95 bash scripts/gpu_speculative_check.sh > $O/spec-min$mt-$SECONDS.txt 2>&1)
  echo "spec ${E:-default} rc=$?"; cut -c1-200 $O/spec-min$mt-*.txt | tail -4 | grep -E "^plain|^a0|CPU tier"; el
done
A=(-m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats)
for st in 1 0; do
  left 50 || break
  LS_MMQ_STREAM=$st timeout 50 $B/layerstream bench "${A[@]}" --batch 32 -n 48 > $O/b32-stream$st.txt 2>&1
  echo "width 32, LS_MMQ_STREAM=$st rc=$?"; grep -E "^\| [0-9]" $O/b32-stream$st.txt | cut -d"|" -f2-5,15-18; grep -E "CPU tier by width" $O/b32-stream$st.txt | cut -c1-250; el
done
(cd $OUT && tar -czf out.tgz r && rm -rf r)
