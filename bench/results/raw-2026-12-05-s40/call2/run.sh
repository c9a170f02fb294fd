#!/bin/bash
# Session 40, call 2 (not run: for the next session): the streamed int8 GEMM
# at decode widths by type and rows (LS_MMQ_DECODE=1), two stages, Q6_K past
# 16 on the register kernel.
#  1. the new split-group test, graphs = direct launches; --widths 70b
#     (the auto column against the forced ones); the pipeline batch test;
#  2. issue 18's replay, K = 7, acceptance 0.7: LS_MMQ_DECODE=1 (the GEMM at
#     decode widths) against the default (the GEMV to 8 tokens),
#     alternated, two rounds each;
#  3. width 32 once (Q6_K back on the register kernel past 16).
# Run: OUT=$OUT LIMIT=520 bash bench/results/raw-2026-12-05-s40/call2/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-520}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
mkdir -p $B $M $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nvidia-smi --query-gpu=name --format=csv,noheader; el
F=$M/70b-q4km-tied.gguf
( [ -f $F ] || timeout 220 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied ) > $O/synth.txt 2>&1 &
SYN=$!
(cd $R && timeout 60 $B/ls_gpu_tests -tc="cuda matmul: decode widths*,cuda backend: decode through CUDA graphs*" -d > $O/tests.txt 2>&1)
echo "tests rc=$?"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|FATAL|ERROR" $O/tests.txt | tail -6; el
timeout 40 $B/ls_bench_matmul --widths 70b > $O/widths-70b.txt 2>&1; echo "widths 70b rc=$?"
grep "widths q4_K\|widths q6_K" $O/widths-70b.txt | sed -E 's/ +GB\/s +[0-9]+//g; s/widths //; s/ +[0-9.]+ MB://; s/ us//g' | sed -E 's/\| n=([0-9]+) (auto|mmq!|reg!|str!|f16) +([0-9.]+) +[0-9.]+ ?/\1\2 \3 /g' | cut -c1-330; el
(cd $R && timeout 90 $B/ls_gpu_tests -tc="cuda pipeline batch*" -d > $O/tests-batch.txt 2>&1)
echo "pipeline batch rc=$?"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|FATAL|ERROR" $O/tests-batch.txt | tail -4; el
wait $SYN; echo "synth rc=$?"; el
# dec: the GEMM at decode widths (LS_MMQ_DECODE=1); gemv: the default.
for r in 1 2; do for v in dec gemv; do
  left 60 || break
  E="LS_MMQ_DECODE=1"; [ $v = gemv ] && E="LS_MMQ_DECODE=0"
  (cd $R && env $E BIN=$B OUT=/tmp/spec-$v-$r MODELS=$M N=128 KS=" " ALPHA_KS="7" timeout $((LIMIT - SECONDS)) bash scripts/gpu_speculative_check.sh > $O/spec-$v-$r.txt 2>&1)
  echo "spec $E round $r rc=$?"; cut -c1-140 $O/spec-$v-$r.txt | grep -E "^plain|^a0|ratio|CPU tier by width"; el
  cp /tmp/spec-$v-$r/a0.7-k7.err $O/spec-$v-$r-k7.err 2>/dev/null
done; done
if left 50; then
  timeout 48 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats --batch 32 -n 64 > $O/b32.txt 2>&1
  echo "width 32 rc=$?"; grep -E "^\| [0-9]" $O/b32.txt | cut -d"|" -f2-5,15-18; el
fi
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
