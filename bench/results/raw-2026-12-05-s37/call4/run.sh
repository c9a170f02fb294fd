#!/bin/bash
# Session 37, call 4: call 3 again (issue 18's replay check with the new
# binary: plain, K = 7 at acceptance 1 and 0.7, K chosen at 0.7), then the
# GEMM A/B old/new with nothing else running (call 3's ran beside the synth).
# Run: OUT=$OUT LIMIT=330 bash bench/results/raw-2026-12-05-s37/call4/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; BO=/tmp/bo; M=/tmp/ls-models; LIMIT=${LIMIT:-330}
mkdir -p $B $BO $M
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
el
[ -x $B/layerstream ] || tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
[ -x $BO/layerstream ] || tar -xJf $R/.gpubin/old.txz -C $BO || exit 2
F=$M/70b-q4km-tied.gguf
[ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
S=/tmp/spec4
(cd $R && BIN=$B OUT=$S MODELS=$M N=128 KS="7" ALPHA_KS="7 0" timeout $((LIMIT - SECONDS - 100)) bash scripts/gpu_speculative_check.sh > $O/spec.txt 2>&1)
echo "spec rc=$?"; cut -c1-240 $O/spec.txt; el
(cd /tmp && tar -czf $O/spec-err.tgz spec4/*.err)
for r in 1 2; do
  for v in old new; do
    left 25 || break
    bin=$B; [ $v = old ] && bin=$BO
    timeout 40 $bin/ls_bench_cpu_matmul --threads 16 --ntok 8 --types q4_k,q6_k --act q8 --path gemm \
      --direct on --shapes 70b --weights-gib 4 --reps 5 > $O/mm-$v-$r.txt 2>&1
    echo "mm $v $r rc=$?"; grep -E "^q[46]_K" $O/mm-$v-$r.txt | awk '{printf "%s %s %s %s | ", $1, $2, $4, $16}'; echo
  done
done
el
