#!/bin/bash
# Session 29, call 5: the AVX-512 VNNI dot at 2-8 tokens in the interleaved
# form (LS_DOT_IL=1, the default) against the permute tree (LS_DOT_IL=0),
# same binary, alternated: (1) ls_bench_cpu_matmul, 16 threads, 70b shapes,
# q4_K (q6_K: unchanged, the control), 1-6 tokens, dot path; (2) the tied
# synthetic 70b Q4_K_M at 24 GiB: bench --batch 1,2,4 (128-token prompts) and
# the replay draft at acceptance 1 with K = 1 and 3 (verify steps of widths
# 2 and 4) beside plain decode.
set -u
R=$1; O=$OUT; B=/tmp/b; M=/tmp/ls-models; mkdir -p $B $M
el() { echo "--- $(date -u +%T)"; }
el
tar -xJf $R/.gpubin/bin.txz -C $B || exit 2
for r in 1 2; do
  IL="1 0"; [ $r = 2 ] && IL="0 1"
  for il in $IL; do
    LS_DOT_IL=$il timeout 80 $B/ls_bench_cpu_matmul --threads 16 --ntok 1,2,4,6 --types q4_k,q6_k --act q8 --path dot --shapes 70b --reps 7 > $O/mm-$r-il$il.txt 2>&1
    echo "matmul round $r LS_DOT_IL=$il rc=$?"; grep -E "^q[46]_K" $O/mm-$r-il$il.txt | awk '{print $1, $2, $3, $4, $15, $19, $21}'
  done
done; el
F=$M/70b-tied.gguf
timeout 120 $B/layerstream synth -q -o $F --preset 70b --quant q4_k_m --tied; echo "synth rc=$?"; el
A=(-m $F --vram-budget 24GiB --ram-budget 48GiB)
for il in 1 0; do
  LS_DOT_IL=$il timeout 120 $B/layerstream bench "${A[@]}" --batch 1,2,4 --prompt-tokens 128 -n 32 -c 256 > $O/batch-il$il.txt 2>&1
  echo "batch LS_DOT_IL=$il rc=$?"; grep -E "^\| [0-9]" $O/batch-il$il.txt | cut -c1-160
done; el
D=(-p "Once upon a time" -n 64 --temp 0 --ids --no-display-prompt)
timeout 90 $B/layerstream decode "${A[@]}" "${D[@]}" > $O/plain.txt 2> $O/plain.err; tail -1 $O/plain.txt > $O/plain.ids
grep -o "generated.*tok/s" $O/plain.err
for il in 1 0 1 0; do
  for k in 1 3; do
    LS_DOT_IL=$il timeout 90 $B/layerstream decode "${A[@]}" "${D[@]}" --draft replay:$O/plain.ids:1 --draft-min $k --draft-max $k > $O/r.txt 2> $O/r-il$il-k$k.err
    echo "LS_DOT_IL=$il K=$k: $(grep -o 'generated.*tok/s' $O/r-il$il-k$k.err) | $(grep -o 'verify [0-9.]* s' $O/r-il$il-k$k.err) | $(cmp -s $O/plain.ids <(tail -1 $O/r.txt) && echo ids = plain || echo differ)"
  done
done; el
