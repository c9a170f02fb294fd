#!/bin/bash
# Session 42, call 3 (the last device time of the session, ~250 s): call 2's
# essentials, shortened. The direct tile's rows form (LS_DIRECT_PAIRS_MIN=9)
# against the pairs form (the default) at 4 and 8 tokens on the Xeon, while
# the 70b is written (both forms beside the same writer, alternated); then
# issue 18's replay at acceptance 0.7, K = 7, in the time left.
# Run: OUT=$OUT LIMIT=250 bash bench/results/raw-2026-12-06-s42/call3/run.sh $PWD
set -u
R=$1; O=$OUT/r; B=/tmp/b; M=/tmp/ls-models; LIMIT=${LIMIT:-250}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
pack() { (cd $OUT && tar -czf out.tgz r); }
mkdir -p $B $M $O
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
nvidia-smi --query-gpu=name --format=csv,noheader; el
F=$M/70b-q4km-tied.gguf
( [ -f $F ] || timeout 200 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied ) > $O/synth.txt 2>&1 &
SYN=$!
for r in 1 2 3; do for v in 9 4; do
  LS_DIRECT_PAIRS_MIN=$v timeout 30 $B/ls_bench_cpu_matmul --threads 16 --ntok 4,8 --direct on --amx off --types q4_k,q6_k --act q8 --path gemm --shapes 70b --reps 5 --weights-gib 4 > $O/mm-p$v-$r.txt 2>&1
  echo "cpu gemm pairs-min $v round $r rc=$?"; grep -E "^q[46]_K" $O/mm-p$v-$r.txt | awk '{print $1, $3, $4, $(NF-6), $NF}' | tr '\n' ';'; echo
done; done; el; pack
wait $SYN; echo "synth rc=$?"; el; pack
[ $((LIMIT - SECONDS)) -ge 60 ] && (cd $R && BIN=$B OUT=/tmp/spec MODELS=$M N=128 KS=" " ALPHA_KS="7" ROUNDS=2 timeout $((LIMIT - SECONDS)) bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1)
echo "spec rc=$?"; cut -c1-200 $O/spec.txt | grep -E "^plain|^a0|ratio|median|CPU tier by width"; el
for f in /tmp/spec/*.err; do cp $f $O/spec-$(basename $f) 2>/dev/null; done
(cd $OUT && tar -czf out.tgz r && rm -rf r); ls -la $OUT
