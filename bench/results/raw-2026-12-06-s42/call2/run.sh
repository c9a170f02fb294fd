#!/bin/bash
# Session 42, call 2 (binary of HEAD, default flags unless said):
#  1. the pipeline's batch GPU test, given 130 s (call 1 stopped it at 100 s
#     with every assertion passed so far), while the 70b is written;
#  2. the direct tile's two forms on the Xeon (same binary): rows
#     (LS_DIRECT_PAIRS_MIN=9) against pairs (the default from 4 tokens), at 4
#     and 8 tokens, 16 threads, 70b shapes, alternated, two rounds;
#  3. issue 18: the replay at acceptance 0.7, K = 7, three rounds of plain
#     and speculative (each ratio to its round's plain run);
#  4. issue 17 in its own shape: 32 sequences, 128-token prompts, 128 new
#     tokens each, twice.
# Run: OUT=$OUT LIMIT=520 [MM_ROUNDS=2] [BATCH_S=130; 0 skips] bash bench/results/raw-2026-12-06-s42/call2/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-520}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
pack() { (cd $OUT && tar -czf out.tgz r); }
mkdir -p $B $M $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nvidia-smi --query-gpu=name --format=csv,noheader; el
F=$M/70b-q4km-tied.gguf
( [ -f $F ] || timeout 220 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied ) > $O/synth.txt 2>&1 &
SYN=$!
if [ "${BATCH_S:-130}" -gt 0 ]; then
  (cd $R && timeout ${BATCH_S:-130} $B/ls_gpu_tests -tc="cuda pipeline batch*" -d > $O/tests-batch.txt 2>&1)
  echo "pipeline batch rc=$?"; grep -E "^[0-9.]+ s:|test cases|assertions|Status|FATAL|ERROR" $O/tests-batch.txt | tail -4; el
fi
wait $SYN; echo "synth rc=$?"; el; pack
(cd $R && timeout 30 $B/ls_unit_tests -tc="*cpu_gemm_q8*" > $O/unit-gemm.txt 2>&1; echo "gemm unit rc=$?"; LS_DIRECT_PAIRS_MIN=2 timeout 30 $B/ls_unit_tests -tc="*cpu_gemm_q8*" >> $O/unit-gemm.txt 2>&1; echo "gemm unit, pairs from 2, rc=$?")
for r in $(seq 1 ${MM_ROUNDS:-2}); do for v in 9 4; do
  LS_DIRECT_PAIRS_MIN=$v timeout 30 $B/ls_bench_cpu_matmul --threads 16 --ntok 4,8 --direct on --amx off --types q4_k,q6_k --act q8 --path gemm --shapes 70b --reps 7 --weights-gib 4 > $O/mm-p$v-$r.txt 2>&1
  echo "cpu gemm pairs-min $v round $r rc=$?"; grep -E "^q[46]_K" $O/mm-p$v-$r.txt | awk '{print $1, $3, $4, $(NF-6), $NF}' | tr '\n' ';'; echo
done; done; el; pack
left 150 && (cd $R && BIN=$B OUT=/tmp/spec MODELS=$M N=128 KS=" " ALPHA_KS="7" ROUNDS=3 timeout $((LIMIT - SECONDS - 130)) bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1)
echo "spec rc=$?"; cut -c1-200 $O/spec.txt | grep -E "^plain|^a0|ratio|median|CPU tier by width"; el
for f in /tmp/spec/*.err; do cp $f $O/spec-$(basename $f) 2>/dev/null; done; pack
for r in 1 2; do
  left 65 || break
  timeout 75 $B/layerstream bench -m $F --vram-budget 24GiB --ram-budget 48GiB --prompt-tokens 128 -c 256 --stats --batch 32 -n 128 > $O/b32-$r.txt 2>&1
  echo "width 32 run $r rc=$?"; grep -E "^\| [0-9]" $O/b32-$r.txt | cut -d"|" -f2-5,15-18; grep "CPU tier by width" $O/b32-$r.txt | cut -c1-200; el; pack
done
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
