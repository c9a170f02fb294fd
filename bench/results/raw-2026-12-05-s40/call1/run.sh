#!/bin/bash
# Session 40, call 1 (session 39's next/run.sh, reordered to fit one call):
#  1. the pipeline's GPU tests to their end, with durations (session 39:
#     the batch test still running at 60-100 s with the int8 GEMM at decode
#     widths); then the batch test and the captured-GEMM scratch test with
#     LS_MMQ_MIN_TOK=5 (or LS_MMQ_STREAM=0 if the default timed out);
#  2. the streamed GEMM's test with two stages where x is staged, and
#     --widths 70b with 3 against 2 stages;
#  3. issue 18's replay at K = 7, acceptance 0.7, three alternated rounds
#     (each K's median ratio to its round's plain run), default settings.
# Run: OUT=$OUT LIMIT=570 bash bench/results/raw-2026-12-05-s40/call1/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-570}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
mkdir -p $B $M $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nvidia-smi --query-gpu=name --format=csv,noheader; el
F=$M/70b-q4km-tied.gguf
( [ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied ) > $O/synth.txt 2>&1 &
SYN=$!
(cd $R && timeout 200 $B/ls_gpu_tests -tc="cuda pipeline*" -d > $O/pipeline-tests.txt 2>&1); PT=$?
echo "pipeline tests rc=$PT"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|FATAL" $O/pipeline-tests.txt | tail -12; el
if [ $PT = 124 ]; then
  (cd $R && LS_MMQ_STREAM=0 timeout 150 $B/ls_gpu_tests -tc="cuda pipeline batch*" -d > $O/pipeline-batch-reg.txt 2>&1)
  echo "pipeline batch, LS_MMQ_STREAM=0 rc=$?"; grep -E "^[0-9.]+ s:|test cases|Status" $O/pipeline-batch-reg.txt | tail -4; el
else
  (cd $R && LS_MMQ_MIN_TOK=5 timeout 150 $B/ls_gpu_tests -tc="cuda pipeline batch*,cuda matmul: a captured*" -d > $O/pipeline-batch-mmq5.txt 2>&1)
  echo "pipeline batch, LS_MMQ_MIN_TOK=5 rc=$?"; grep -E "^[0-9.]+ s:|test cases|Status" $O/pipeline-batch-mmq5.txt | tail -4; el
fi
(cd $R && LS_MMQ_STAGES=2 timeout 60 $B/ls_gpu_tests -tc="cuda matmul: mmq*" > $O/test-mmq-s2.txt 2>&1)
echo "mmq test, 2 stages rc=$?"; tail -2 $O/test-mmq-s2.txt
for st in 3 2; do
  LS_MMQ_STAGES=$st timeout 60 $B/ls_bench_matmul --widths 70b > $O/widths-s$st.txt 2>&1; echo "widths, $st stages rc=$?"
  grep "widths q4_K\|widths q6_K" $O/widths-s$st.txt | sed -E 's/ +GB\/s +[0-9]+//g; s/widths //; s/ +[0-9.]+ MB://; s/ us//g' | cut -c1-220
done; el
wait $SYN; echo "synth rc=$?"; el
if left 150; then
  (cd $R && BIN=$B OUT=/tmp/spec0 MODELS=$M N=128 KS=" " ALPHA_KS="7" ROUNDS=3 timeout $((LIMIT - SECONDS - 10)) bash scripts/gpu_speculative_check.sh > $O/spec-default.txt 2>&1)
  echo "spec default rc=$?"; cut -c1-160 $O/spec-default.txt | grep -E "^plain|^a0|ratio"; el
  cp /tmp/spec0/*.err $O/ 2>/dev/null
fi
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
