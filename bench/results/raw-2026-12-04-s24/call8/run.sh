#!/bin/bash
# Session 24, call 8: the chunk GEMM prefetching the next chunk's tiles into
# L1 and the next weight row into L2, against call 7's binary (old), same
# call: chunk tests on the tile unit, then ls_bench_cpu_matmul q4_K/q6_K
# gate/up and down at 8-64 tokens, old and new alternated, two rounds.
set -u
R=$1; O=$OUT; B=/tmp/b; mkdir -p $B
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
timeout 60 $B/ls_unit_tests -tc="cpu_q8_chunks*" > $O/unit.txt 2>&1
echo "unit rc=$?"; grep -E "test cases|SKIPPED" $O/unit.txt
for round in 1 2; do for v in old new; do
  S=$B/ls_bench_cpu_matmul; [ $v = old ] && S=$B/ls_bench_cpu_matmul_old
  timeout 60 $S --threads 16 --ntok 8,16,32,64 --types q4_k,q6_k --act q8 --path gemm --form chunks --amx on --shapes 70b --reps 5 --weights-gib 2 > $O/mm-$v-$round.txt 2>&1
  echo "$v round $round"; grep -E "gate/up|down" $O/mm-$v-$round.txt | awk '{print $1,$3,$4,$15}' | paste -sd' '
done; done
grep "core clock" $O/mm-new-1.txt; el
