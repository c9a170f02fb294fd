#!/bin/bash
# Session 54, call 4: the verify step's CPU GEMM at 8 tokens. A width-8
# verify step of the 70b at 24 GiB spends most of its time in the CPU
# tier's layers (7.8-8.9 ms against 5.8 at width 1, call 2), whose GEMM at
# 8 tokens (the direct VNNI tile, the default) is bound by its arithmetic:
# a 70b layer's 6.85 G products at 8 tokens take about what its bytes take
# at this host's VNNI peak. The chunk form's AMX GEMM (LS_CPU_Q8_FORM=chunks,
# from 8 tokens) has 16x the multiply rate and one float step per 256
# products; session 24 measured it against the lane form's AMX path, never
# against the direct tile. (1) ls_bench_cpu_matmul at 8 tokens, the 70b's
# Q4_K and Q6_K shapes: direct tile (lanes) against AMX (chunks), two
# alternated rounds. (2) The engine: 70b at 24 GiB, 4,093-token prompt,
# plain and replay K = 7 at 0.7 under each form (each form's replay from its
# own plain ids: the two forms round differently), one or two rounds.
# Run: OUT=$OUT LIMIT=560 bash bench/results/raw-2026-12-07-s54/call4/run.sh $PWD (timeout 590; carry .gpubin/bin.txz)
set -u
R=$1; O=$OUT/r; LIMIT=${LIMIT:-560}
. "$R/scripts/gpu_call_lib.sh"
unpack_bins
synth_70b_bg; wait $SYN; echo "synth rc=$?"; el
MM=$B/ls_bench_cpu_matmul
C=(--threads 16 --ntok 8 --types q4_k,q6_k --act q8 --path gemm --shapes 70b --reps 7 --weights-gib 4)
for r in 1 2; do
  timeout 60 $MM "${C[@]}" --direct on --amx off --form lanes > $O/mm-direct-$r.txt 2>&1; echo "direct r$r rc=$?"
  grep -iE "^q[46]_k" $O/mm-direct-$r.txt | cut -c1-200
  timeout 60 $MM "${C[@]}" --direct off --amx on --form chunks > $O/mm-chunks-$r.txt 2>&1; echo "chunks r$r rc=$?"
  grep -iE "^q[46]_k" $O/mm-chunks-$r.txt | cut -c1-200
done; el; pack
P=/tmp/prompt-4k.txt
for i in 1 2 3 4; do cat "$R/scripts/data/prompt-1k.txt"; done > $P
L=$B/layerstream
A=(-m "$F" --vram-budget 24GiB --ram-budget 48GiB -c 4608 -f $P -n 64 --temp 0 --ids
   --no-display-prompt --stats)
tps() { grep -o "generated [0-9]* tokens, [0-9.]* tok/s" "$1"; }
for r in 1 2; do
  for form in lanes chunks; do
    left 75 || break
    f=$O/$form-$r
    LS_CPU_Q8_FORM=$form timeout 70 $L decode "${A[@]}" > $f-plain.txt 2> $f-plain.err
    echo "round $r $form plain rc=$? $(tps $f-plain.err)"
    tail -1 $f-plain.txt > $f.ids
    left 45 || break
    LS_CPU_Q8_FORM=$form timeout 60 $L decode "${A[@]}" --draft "replay:$f.ids:0.7" --draft-min 7 \
      --draft-max 7 > $f-spec.txt 2> $f-spec.err; rc=$?
    same=differ; cmp -s $f.ids <(tail -1 $f-spec.txt) && same="ids = plain"
    echo "round $r $form spec rc=$rc: $(tps $f-spec.err) | $(grep -o 'verify [0-9.]* s' $f-spec.err) | $same"
    grep -hE "CPU tier by width" $f-plain.err $f-spec.err | cut -c1-200
  done
  el; pack
done
finish
