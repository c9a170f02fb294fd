#!/bin/bash
# Session 24, call 9: the chunk form's one-token dot working 8 chunks at a
# time. Its bits on AVX-512 (tests), the dots at 1 and 8 tokens against the
# lane form and call 7's chunk dot (old), two rounds; then the 70b at 24 GiB,
# bench --batch 1,32 with default flags (chunks on this AMX machine) and with
# LS_CPU_Q8_FORM=lanes, in the same call.
set -u
R=$1; O=$OUT; M=/tmp/ls-models; B=/tmp/b; mkdir -p $M $B
el() { echo "--- $(date -u +%T)"; }
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
timeout 60 $B/ls_unit_tests -tc="cpu_q8_chunks*,cpu_gemm_q8*" > $O/unit.txt 2>&1
echo "unit rc=$?"; grep -E "test cases|SKIPPED" $O/unit.txt
for round in 1 2; do for v in new old; do
  S=$B/ls_bench_cpu_matmul; [ $v = old ] && S=$B/ls_bench_cpu_matmul_old
  timeout 60 $S --threads 16 --ntok 1,8 --types q4_k,q6_k --act q8 --path dot --form lanes,chunks --shapes 70b --reps 7 --weights-gib 2 > $O/dot-$v-$round.txt 2>&1
  echo "$v round $round"; grep -E "^q" $O/dot-$v-$round.txt | awk '{print $1,$3,$4,$6,$15,$21}' | paste -sd' '
done; done
grep "core clock" $O/dot-new-1.txt; el
timeout 150 $B/layerstream synth -q -o $M/70b.gguf --preset 70b --quant q4_k_m; el
for v in default lanes; do
  E=""; [ $v = lanes ] && E="LS_CPU_Q8_FORM=lanes"
  env $E timeout 100 $B/layerstream bench -m $M/70b.gguf --vram-budget 24GiB --ram-budget 48GiB --batch 1,32 --prompt-tokens 128 -n 32 -c 256 --stats > $O/batch70-$v.txt 2>&1
  echo "70b $v rc=$?"; grep -E "^\|" $O/batch70-$v.txt | cut -d'|' -f1-5,15-20 | head -5; grep -E "CPU tier by width" $O/batch70-$v.txt; el
done
