#!/bin/bash
# Session 37, call 5: issue 18's plain and K = 7 at acceptance 0.7, twice
# more (new binary), then the GEMM A/B at 8 tokens once more with 9 reps.
# Run: OUT=$OUT LIMIT=260 bash bench/results/raw-2026-12-05-s37/call5/run.sh $PWD
set -u
R=$1; O=$OUT; B=/tmp/b; BO=/tmp/bo; M=/tmp/ls-models; LIMIT=${LIMIT:-260}
el() { echo "--- $(date -u +%T) (${SECONDS}s)"; }
left() { [ $((LIMIT - SECONDS)) -ge $1 ]; }
[ -x $B/layerstream ] || tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
[ -x $BO/layerstream ] || tar -xJf $R/.gpubin/old.txz -C $BO || exit 2
F=$M/70b-q4km-tied.gguf
[ -f $F ] || timeout 150 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
for r in 1 2; do
  left 80 || break
  (cd $R && BIN=$B OUT=/tmp/spec5-$r MODELS=$M N=128 KS="" ALPHA_KS="7" timeout 75 bash scripts/gpu_speculative_check.sh > $O/spec-$r.txt 2>&1)
  echo "spec $r rc=$?"; cut -c1-200 $O/spec-$r.txt | grep -E "^plain|^a0"; el
done
(cd /tmp && tar -czf $O/spec-err.tgz spec5-*/*.err)
for r in 1 2; do
  for v in old new; do
    left 25 || break
    bin=$B; [ $v = old ] && bin=$BO
    timeout 40 $bin/ls_bench_cpu_matmul --threads 16 --ntok 8 --types q4_k,q6_k --act q8 --path gemm \
      --direct on --shapes 70b --weights-gib 4 --reps 9 > $O/mm-$v-$r.txt 2>&1
    echo "mm $v $r rc=$?"; grep -E "^q[46]_K" $O/mm-$v-$r.txt | awk '{printf "%s %s %s %s | ", $1, $2, $4, $16}'; echo
  done
done
el
