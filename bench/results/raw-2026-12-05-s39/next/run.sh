#!/bin/bash
# For the next session's first call (written in session 39, not run yet).
# Pack first: scripts/gpu_pack.sh; carry .gpubin/bin.txz.
# Run: OUT=$OUT LIMIT=560 bash bench/results/raw-2026-12-05-s39/next/run.sh $PWD
# Output: $OUT/out.tgz. In order, while LIMIT lasts:
#  1. the pipeline's batch test to its end, with its duration (session 39:
#     still running, no assertion failed, at 100 and ~60 s, with the int8
#     GEMM at decode widths), then with LS_MMQ_MIN_TOK=5 after 95c2c2a;
#  2. the streamed GEMM with two stages where x is staged (LS_MMQ_STAGES=2:
#     three blocks an SM instead of two): its test, then --widths 70b
#     against the default;
#  3. issue 18's replay at K = 7, three alternated rounds, each K's median
#     ratio: the default (the GEMV at decode widths), then LS_MMQ_MIN_TOK=5
#     (the streamed int8 GEMM from 5 tokens) if time is left;
#  4. width 32 with the default device slots (4 there since session 39)
#     against 3.
set -u
R=$1; O=$OUT/r; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-560}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
mkdir -p $B $M $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nvidia-smi --query-gpu=name --format=csv,noheader; el
F=$M/70b-q4km-tied.gguf
( [ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied ) > $O/synth.txt 2>&1 &
SYN=$!
(cd $R && timeout 240 $B/ls_gpu_tests -tc="cuda pipeline*" -d > $O/pipeline-tests.txt 2>&1); PT=$?
echo "pipeline tests rc=$PT"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|FATAL" $O/pipeline-tests.txt | tail -8; el
# Session 38 (call 2, the register kernel with LS_MMQ_MIN_TOK=2) and 39
# (calls 6-7, the streamed one from 5 tokens) both saw the batch test still
# running at 60-100 s; session 38's call 4 (the GEMV to 8 tokens) passed it.
# If it does not end here (the GEMV to 8, the streamed kernel from 9), the
# register kernel everywhere tells whether the streamed kernel is why.
if [ $PT = 124 ]; then
  (cd $R && LS_MMQ_STREAM=0 timeout 200 $B/ls_gpu_tests -tc="cuda pipeline batch*" -d > $O/pipeline-batch-reg.txt 2>&1)
  echo "pipeline batch, LS_MMQ_STREAM=0 rc=$?"; grep -E "^[0-9.]+ s:|test cases|Status" $O/pipeline-batch-reg.txt | tail -4; el
else
  # 95c2c2a: the int8 GEMM's x scratch no longer moves under the graphs of
  # the decode widths it takes; with it from 5 tokens the test should end too.
  (cd $R && LS_MMQ_MIN_TOK=5 timeout 200 $B/ls_gpu_tests -tc="cuda pipeline batch*,cuda matmul: a captured*" -d > $O/pipeline-batch-mmq5.txt 2>&1)
  echo "pipeline batch, LS_MMQ_MIN_TOK=5 rc=$?"; grep -E "^[0-9.]+ s:|test cases|Status" $O/pipeline-batch-mmq5.txt | tail -4; el
fi
(cd $R && LS_MMQ_STAGES=2 timeout 60 $B/ls_gpu_tests -tc="cuda matmul: mmq*" > $O/test-mmq-s2.txt 2>&1)
echo "mmq test, 2 stages rc=$?"; tail -2 $O/test-mmq-s2.txt
for st in 3 2; do
  LS_MMQ_STAGES=$st timeout 60 $B/ls_bench_matmul --widths 70b > $O/widths-s$st.txt 2>&1; echo "widths, $st stages rc=$?"
  grep "widths q4_K\|widths q6_K" $O/widths-s$st.txt | sed -E 's/ +GB\/s +[0-9]+//g; s/widths //; s/ +[0-9.]+ MB://; s/ us//g' | cut -c1-220
done; el
wait $SYN; echo "synth rc=$?"; el
for mt in 0 5; do
  left 200 || break
  E=""; [ $mt = 5 ] && E="LS_MMQ_MIN_TOK=5"
  (cd $R && env $E BIN=$B OUT=/tmp/spec$mt MODELS=$M N=128 KS=" " ALPHA_KS="7" ROUNDS=3 timeout 280 bash scripts/gpu_speculative_check.sh > $O/spec-min$mt.txt 2>&1)
  echo "spec ${E:-default} rc=$?"; cut -c1-160 $O/spec-min$mt.txt | grep -E "^plain|^a0|ratio"; el
done
# 4. issue 17's width 32 with the new default slots (4 from 32 sequences)
#    against 3, alternated, while time is left.
A=(-m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats --batch 32 -n 64)
for r in 1 2; do for sl in 0 3; do
  left 45 || break
  timeout 45 $B/layerstream bench "${A[@]}" --device-slots $sl > $O/b32-slots$sl-$r.txt 2>&1
  echo "width 32, --device-slots $sl rc=$?"; grep -E "^\| [0-9]" $O/b32-slots$sl-$r.txt | cut -d"|" -f2-5,15-18; el
done; done
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
